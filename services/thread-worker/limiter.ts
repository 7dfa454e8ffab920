import { StoppedError } from "./retry.ts";

/**
 * At most `limit` holders at once, first come first served: the process-wide bound on summarizer
 * calls in flight (HISTORY_CONCURRENCY), shared by every thread of the process.
 */
export class Limiter {
  readonly limit: number;
  #active = 0;
  #waiting: { grant: () => void; reject: (err: Error) => void }[] = [];

  constructor(limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new RangeError(
        `limiter: limit ${limit} must be a whole number ≥ 1 (HISTORY_CONCURRENCY)`,
      );
    }
    this.limit = limit;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Resolves once a place is free; rejects with StoppedError if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new StoppedError("summarizer slot"));
    if (this.#active < this.limit) {
      this.#active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        this.#waiting = this.#waiting.filter((w) => w !== waiter);
        reject(new StoppedError("summarizer slot"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  release(): void {
    const next = this.#waiting.shift();
    // The place passes straight to the next waiter: `active` stays the same.
    if (next) next.grant();
    else this.#active = Math.max(0, this.#active - 1);
  }
}
