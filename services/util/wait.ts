// Waiting, for every service: the one sleep, and the one backoff formula retries wait by. Below
// every other folder of services/ (it imports nothing of theirs), so any of them may use it.

/** Thrown out of a wait or a retry loop when the owner stopped (crash simulation, shutdown). */
export class StoppedError extends Error {
  override readonly name = "StoppedError";
  constructor(what: string) {
    super(`${what}: stopped before it finished`);
  }
}

/**
 * Waits `ms`, or rejects with StoppedError as soon as `signal` aborts. `unref`: the wait does not
 * keep the process alive (a bound on something else that may end first, at shutdown).
 */
export function sleep(
  ms: number,
  signal?: AbortSignal,
  options: { unref?: boolean } = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new StoppedError("wait"));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    if (options.unref) timer.unref();
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StoppedError("wait"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The wait before retry `attempt` (0-based): `baseMs`·2^attempt, at most `capMs`, then spread by
 * ±`jitter` (a share; 0.2 by default) so that callers that failed together do not retry together.
 * With `jitter` 0 the plain doubling, unrounded.
 */
export function backoffMs(attempt: number, baseMs: number, capMs: number, jitter = 0.2): number {
  const plain = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  if (jitter === 0) return plain;
  return Math.round(plain * (1 - jitter + Math.random() * 2 * jitter));
}
