import { errorText, type Logger } from "./log.ts";

// JetStream answers a full store (max_file_store, or the disk) with only "insufficient resources".
const STORE_FULL = /insufficient resources/i;
const STORE_FULL_FIX =
  "JetStream's store is full: free disk space or raise max_file_store in nats-server.conf (jetstream { max_file_store: … }); nothing is acknowledged until it is stored, so nothing is lost meanwhile";

/** A cause still failing is told again this often, however many retries it holds up. */
export const RETRY_REPEAT_MS = 30_000;

/** One retried operation (a durable write, a read, a summary), as its loop reports it. */
export interface RetryEntry {
  /** Its attempt `attempt` (from 0) failed; the next is in `waitMs`. */
  failed(err: unknown, attempt: number, waitMs: number): void;
  /** It ended after `attempts`: succeeded, or abandoned (its owner stopped, a permanent error). */
  ended(succeeded: boolean, attempts: number): void;
}

/** How an operation's failures are told: the level, and what to do about them. */
export interface RetryTelling {
  level?: "warn" | "error";
  /** Said with each line of the cause (a full store's fix is added by itself). */
  fix?: string;
}

/** The retries failing with one cause (the error's text, threads, subjects and numbers aside). */
interface Cause {
  key: string;
  /** Of the retry that opened the cause. */
  telling: RetryTelling;
  /** The error of the retry that opened the cause, as it said it. */
  error: string;
  since: number;
  lastLine: number;
  failing: Set<Retry>;
  succeeded: number;
  mostAttempts: number;
}

/**
 * The worker's log of operations retried in place, grouped by cause. After a server restart or a
 * leader election every thread's writes fail at once: a line per write and attempt (1,124 for 40
 * threads through one restart) buried the one cause. A cause gets a line when it first fails,
 * one every RETRY_REPEAT_MS while retries still fail with it, and one when the last has succeeded.
 */
export class RetryLog {
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #causes = new Map<string, Cause>();

  constructor(log: Logger, now: () => number = Date.now) {
    this.#log = log;
    this.#now = now;
  }

  /** How many causes have retries failing now (a cause is forgotten when its last one ends). */
  get failing(): number {
    return this.#causes.size;
  }

  /** Reports one operation; `what` names it: "save actor state (thread 't')". */
  entry(what: string, telling: RetryTelling = {}): RetryEntry {
    return new Retry(this, what, telling);
  }

  /** `retry`'s attempt failed with `error` (cause `key`): it joins that cause, told if new or due. */
  joined(retry: Retry, error: string, key: string, attempt: number, waitMs: number): Cause {
    const now = this.#now();
    let cause = this.#causes.get(key);
    const telling = cause?.telling ?? retry.telling;
    const fix = telling.fix ?? (STORE_FULL.test(error) ? STORE_FULL_FIX : undefined);
    const fields = { error, ...(fix === undefined ? {} : { fix }) };
    const say = (line: string) => this.#log[telling.level ?? "warn"](line, fields);
    if (!cause) {
      cause = {
        key,
        telling,
        error,
        since: now,
        lastLine: now,
        failing: new Set(),
        succeeded: 0,
        mostAttempts: 0,
      };
      this.#causes.set(key, cause);
      say(
        `${retry.what} failed (attempt ${attempt + 1}), retrying in ${waitMs} ms; others failing the same way are counted, not logged one by one`,
      );
    } else if (now - cause.lastLine >= RETRY_REPEAT_MS) {
      cause.lastLine = now;
      const n = cause.failing.size + (cause.failing.has(retry) ? 0 : 1);
      say(
        `${n} still failing the same way after ${seconds(now - cause.since)} s, retrying; one: ${retry.what} (attempt ${attempt + 1}, next in ${waitMs} ms)`,
      );
    }
    cause.failing.add(retry);
    return cause;
  }

  /** `retry` left `cause` (ended, or failing another way now); the cause closes with its last. */
  left(retry: Retry, cause: Cause): void {
    cause.failing.delete(retry);
    if (cause.failing.size > 0) return;
    this.#causes.delete(cause.key);
    if (cause.succeeded === 0) return;
    this.#log.info(
      `recovered: ${cause.succeeded} that failed this way succeeded, after ${cause.mostAttempts} attempts at most, ${seconds(this.#now() - cause.since)} s after the first failure`,
      { error: cause.error },
    );
  }
}

class Retry implements RetryEntry {
  #cause: Cause | undefined;

  constructor(
    readonly log: RetryLog,
    readonly what: string,
    readonly telling: RetryTelling,
  ) {}

  failed(err: unknown, attempt: number, waitMs: number): void {
    const error = errorText(err);
    const key = causeKey(error);
    if (this.#cause && this.#cause.key !== key) this.#leave();
    this.#cause = this.log.joined(this, error, key, attempt, waitMs);
  }

  ended(succeeded: boolean, attempts: number): void {
    if (!this.#cause) return;
    if (succeeded) {
      this.#cause.succeeded++;
      this.#cause.mostAttempts = Math.max(this.#cause.mostAttempts, attempts);
    }
    this.#leave();
  }

  #leave(): void {
    if (this.#cause) this.log.left(this, this.#cause);
    this.#cause = undefined;
  }
}

/**
 * Retries of different threads fail with texts that differ only in the thread, the subject or key,
 * sequences and sizes: "JetStream did not answer a write to $KV.b.t7 within 5000 ms".
 */
export function causeKey(error: string): string {
  return error
    .replace(/'[^']*'/g, "'…'")
    .replace(/[\w$-]*[.>][\w$.>*-]*/g, "…")
    .replace(/\d+/g, "N");
}

function seconds(ms: number): string {
  return (ms / 1_000).toFixed(1);
}
