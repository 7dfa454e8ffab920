import { backoffMs, sleep, StoppedError } from "../util/wait.ts";
import type { RetryEntry, RetryLog } from "./retry-log.ts";

export { backoffMs, sleep, StoppedError };

export interface RetryOptions {
  /** Says what is being done, for the log: "save actor state of thread t". */
  what: string;
  /** The worker's retry log: failures are told there, grouped by cause. */
  log: RetryLog;
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
  // Made at the first failure: every durable write of the hot path comes through here.
  let entry: RetryEntry | undefined;
  let attempt = 0;
  let succeeded = false;
  try {
    for (; ; attempt++) {
      if (options.signal.aborted) throw new StoppedError(options.what);
      try {
        const value = await fn();
        succeeded = true;
        return value;
      } catch (err) {
        if (options.signal.aborted) throw new StoppedError(options.what);
        if (options.isPermanent?.(err)) throw err;
        const wait = backoffMs(attempt, options.baseMs ?? 100, options.capMs ?? 5_000);
        entry ??= options.log.entry(options.what);
        entry.failed(err, attempt, wait);
        await sleep(wait, options.signal);
      }
    }
  } finally {
    entry?.ended(succeeded, attempt + 1);
  }
}
