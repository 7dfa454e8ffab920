import { JetStreamApiError } from "@nats-io/jetstream";
import { backoffMs, sleep } from "../util/wait.ts";
import { isTransient } from "./transient.ts";

/**
 * How long one step of a start (a stream or bucket made, a key of the cluster bucket read) is
 * asked again. Two instances starting at once on a fresh R3 cluster make the same streams: the
 * second one's requests meet a stream still electing its first leader, which answers nothing
 * (tens of seconds on a loaded host: the cluster tests), and R3 creates themselves take seconds.
 */
export const STARTUP_RETRY_MS = 60_000;

/**
 * How long the first attempt of a step waits for an answer, doubled at each attempt up to
 * MAX_ATTEMPT_MS. A request that meets a stream with no leader yet is dropped, not queued: waiting
 * the client's whole timeout (20 s) for it kept instances started at once from joining for 20 s.
 */
export const FIRST_ATTEMPT_MS = 2_000;
const MAX_ATTEMPT_MS = 16_000;

/** An attempt of a step that had no answer in its time (asked again, as a timeout is). */
export class AttemptTimeout extends Error {
  override readonly name = "AttemptTimeout";
  constructor(ms: number) {
    super(`no answer in ${ms} ms`);
  }
}

/** "stream name already in use": made a moment ago by another instance, with another config. */
const STREAM_NAME_IN_USE = 10058;

/**
 * What a step of a start meets while another instance makes the same stream, or a new stream
 * elects its first leader: asked again. Called after JetStream was found on (ensureTopology), so
 * a publish that finds no responder (nats.js: "jetstream is not enabled") is a stream without a
 * leader; a stream name in use is asked again, and the step finds that stream and uses it.
 */
export function isTransientAtStart(err: unknown): boolean {
  if (isTransient(err) || err instanceof AttemptTimeout) return true;
  if (err instanceof Error && err.name === "JetStreamNotEnabled") return true;
  return err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE;
}

/** A step of a start that kept failing; the message names it, its attempts and how long. */
export class StartupStepError extends Error {
  override readonly name = "StartupStepError";
  readonly code = "STARTUP_STEP_FAILED";
}

export interface StartupStepOptions {
  /** Asked again for at most this long (STARTUP_RETRY_MS). */
  totalMs?: number;
  /** Told each time the step is asked again. */
  log?: (line: string) => void;
  /** The errors asked again (`isTransientAtStart`). */
  transient?: (err: unknown) => boolean;
  /** The first attempt's time for an answer (FIRST_ATTEMPT_MS), doubled at each attempt. */
  attemptMs?: number;
  /** Tests: a clock and a wait of their own, and when an attempt's time is up. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  attemptTimer?: (ms: number) => Promise<void>;
}

/** `fn()`, or AttemptTimeout once `ms` passed first; a late answer is dropped. */
async function within<T>(
  fn: () => Promise<T>,
  ms: number,
  timer: ((ms: number) => Promise<void>) | undefined,
): Promise<T> {
  const answer = fn();
  answer.catch(() => undefined);
  let handle: NodeJS.Timeout | undefined;
  const late = timer
    ? timer(ms)
    : new Promise<void>((resolve) => (handle = setTimeout(resolve, ms)));
  try {
    return await Promise.race([
      answer,
      late.then(() => {
        throw new AttemptTimeout(ms);
      }),
    ]);
  } finally {
    clearTimeout(handle);
  }
}

/**
 * Runs one step of a start (`what`: "creating stream KV_outline-cluster (R3)"), asking again
 * while it fails as a cluster does while it makes or elects (`isTransientAtStart`), for a bounded
 * time. Other errors are thrown as they are (they say what is wrong); a step still failing at
 * the end of its time throws StartupStepError naming it, so a start never ends on a bare
 * "timeout".
 */
export async function startupStep<T>(
  what: string,
  fn: () => Promise<T>,
  options: StartupStepOptions = {},
): Promise<T> {
  const totalMs = options.totalMs ?? STARTUP_RETRY_MS;
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? ((ms: number) => sleep(ms));
  const started = now();
  for (let attempt = 1; ; attempt++) {
    const attemptMs = Math.min(
      MAX_ATTEMPT_MS,
      (options.attemptMs ?? FIRST_ATTEMPT_MS) * 2 ** Math.min(attempt - 1, 4),
    );
    try {
      return await within(fn, attemptMs, options.attemptTimer);
    } catch (err) {
      const transient = options.transient ?? isTransientAtStart;
      if (!(err instanceof AttemptTimeout) && !transient(err)) throw err;
      const message = err instanceof Error ? err.message : String(err);
      const elapsed = now() - started;
      if (elapsed >= totalMs) {
        const how =
          /^timeout$/i.test(message) || err instanceof AttemptTimeout
            ? "timed out"
            : `failed: ${message}`;
        throw new StartupStepError(
          `${what} ${how} (${attempt} attempt(s) over ${(elapsed / 1000).toFixed(1)} s); check that every server of NATS_URL runs and can reach the others (a stream needs a leader, elected by most of its replicas)`,
          { cause: err },
        );
      }
      const wait = Math.min(backoffMs(attempt - 1, 250, 4_000, 0), totalMs - elapsed);
      options.log?.(`${what}: ${message} (attempt ${attempt}); asking again in ${wait} ms`);
      await pause(wait);
    }
  }
}
