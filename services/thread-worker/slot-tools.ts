import { retryInPlace } from "./retry.ts";
import type { WorkerContext } from "./worker-context.ts";

/**
 * What every part of a thread's slot works with: the worker, the thread, and a retry that stops
 * with the slot. One object per slot, its abort signal made on first use: a slot is made for
 * each thread delivered, and an AbortSignal costs more to make than the rest of the slot.
 */
export class SlotTools {
  readonly ctx: WorkerContext;
  readonly thread: string;
  #abort: AbortController | undefined;
  #stopped = false;

  constructor(ctx: WorkerContext, thread: string) {
    this.ctx = ctx;
    this.thread = thread;
  }

  /** Aborted when the slot is abandoned: every retry loop and wait stops at once. */
  get signal(): AbortSignal {
    if (!this.#abort) {
      this.#abort = new AbortController();
      if (this.#stopped) this.#abort.abort();
    }
    return this.#abort.signal;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** The slot is abandoned: retries and waits stop. */
  stop(): void {
    this.#stopped = true;
    this.#abort?.abort();
  }

  /** Retries a durable write or read in place until it succeeds or the slot stops. */
  retry<T>(
    what: string,
    fn: () => Promise<T>,
    isPermanent?: (err: unknown) => boolean,
  ): Promise<T> {
    return retryInPlace(fn, {
      what: `${what} (thread '${this.thread}')`,
      log: this.ctx.retries,
      signal: this.signal,
      isPermanent,
    });
  }
}
