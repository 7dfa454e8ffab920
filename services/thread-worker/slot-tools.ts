import { retryInPlace } from "./retry.ts";
import type { WorkerContext } from "./worker-context.ts";

/** Retries a durable write or read in place until it succeeds or the slot stops. */
export type Retry = <T>(
  what: string,
  fn: () => Promise<T>,
  isPermanent?: (err: unknown) => boolean,
) => Promise<T>;

/** What every part of a thread's slot works with: the worker, the thread, a retry that stops with the slot. */
export interface SlotTools {
  ctx: WorkerContext;
  thread: string;
  retry: Retry;
  /** Aborted when the slot is abandoned: every retry loop and wait stops at once. */
  signal: AbortSignal;
}

export function slotTools(ctx: WorkerContext, thread: string, signal: AbortSignal): SlotTools {
  const retry: Retry = (what, fn, isPermanent) =>
    retryInPlace(fn, {
      what: `${what} (thread '${thread}')`,
      log: ctx.log,
      signal,
      ...(isPermanent ? { isPermanent } : {}),
    });
  return { ctx, thread, retry, signal };
}
