import { errorText, type Logger } from "./log.ts";

/** Thrown out of a wait or a retry loop when the owner stopped (crash simulation, shutdown). */
export class StoppedError extends Error {
  override readonly name = "StoppedError";
  constructor(what: string) {
    super(`${what}: stopped before it finished`);
  }
}

/** Exponential backoff with ±20 % jitter, so threads that failed together do not retry together. */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  const plain = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(plain * (0.8 + Math.random() * 0.4));
}

/** Waits `ms`, or rejects with StoppedError as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new StoppedError("wait"));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StoppedError("wait"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

// JetStream answers a full store (max_file_store, or the disk) with only "insufficient resources".
const STORE_FULL = /insufficient resources/i;
const STORE_FULL_FIX =
  "JetStream's store is full: free disk space or raise max_file_store in nats-server.conf (jetstream { max_file_store: … }); nothing is acknowledged until it is stored, so nothing is lost meanwhile";

export interface RetryOptions {
  /** Says what is being done, for the log: "save actor state of thread t". */
  what: string;
  log: Logger;
  /** Aborted when the owner stops: the loop ends with StoppedError. */
  signal: AbortSignal;
  /** Errors that retrying cannot fix are rethrown at once. */
  isPermanent?: (err: unknown) => boolean;
  baseMs?: number;
  capMs?: number;
}

/**
 * Retries a durable write in place until it succeeds. The worker never naks to retry a write:
 * a redelivery would come after later events of the same thread and reorder them.
 */
export async function retryInPlace<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    if (options.signal.aborted) throw new StoppedError(options.what);
    try {
      return await fn();
    } catch (err) {
      if (options.signal.aborted) throw new StoppedError(options.what);
      if (options.isPermanent?.(err)) throw err;
      const wait = backoffMs(attempt, options.baseMs ?? 100, options.capMs ?? 5_000);
      options.log.warn(`${options.what} failed (attempt ${attempt + 1}), retrying in ${wait} ms`, {
        error: errorText(err),
        ...(STORE_FULL.test(errorText(err)) ? { fix: STORE_FULL_FIX } : {}),
      });
      await sleep(wait, options.signal);
    }
  }
}
