import type { NodeRef } from "../../shared/names.ts";
import { refKey as keyOf } from "../../shared/nodes.ts";
import { backoffMs } from "./retry.ts";
import type { RetryEntry, RetryLog } from "./retry-log.ts";

interface Refusal {
  failures: number;
  /** Epoch ms before which the node is not tried again. */
  until: number;
  /** Its line in the retry log: a refused key refuses every node, told once. */
  told: RetryEntry | undefined;
}

/** Why a node was refused, for the log. */
export interface RefusalCause {
  /** "summarize 3+1 of thread 't'". */
  what: string;
  error: unknown;
  /** What to do about it. */
  fix: string;
}

/** Threads whose refusals are kept at most; past it the longest-kept thread is forgotten. */
const MAX_THREADS = 100_000;

/**
 * Nodes the summarizer refused (a terminal error), per thread, for the whole worker process: how
 * often, and until when the node waits before it is tried again. Kept here rather than with a
 * thread's jobs so that a thread can leave memory while its nodes wait (a refused node can wait
 * 15 minutes; a thread waiting in memory that long is a leak when many are refused) and still
 * wait out the rest of its backoff when it comes back. Forgetting (a restart, a thread past
 * MAX_THREADS) only means the node is tried again sooner.
 */
export class Refusals {
  readonly #threads = new Map<string, Map<string, Refusal>>();
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #retries: RetryLog | undefined;

  constructor(timing: { terminalBaseMs: number; terminalCapMs: number }, retries?: RetryLog) {
    this.#baseMs = timing.terminalBaseMs;
    this.#capMs = timing.terminalCapMs;
    this.#retries = retries;
  }

  /** Records one more refusal of the node, told to the retry log; returns how long it waits (ms). */
  refused(thread: string, ref: NodeRef, now: number, cause?: RefusalCause): number {
    let nodes = this.#threads.get(thread);
    if (nodes)
      this.#threads.delete(thread); // re-inserted: the most recently refused go last
    else nodes = new Map();
    this.#threads.set(thread, nodes);
    const held = nodes.get(keyOf(ref));
    const failures = (held?.failures ?? 0) + 1;
    const wait = backoffMs(failures - 1, this.#baseMs, this.#capMs);
    const told =
      held?.told ?? (cause && this.#retries?.entry(cause.what, { level: "error", fix: cause.fix }));
    if (cause) told?.failed(cause.error, failures - 1, wait);
    nodes.set(keyOf(ref), { failures, until: now + wait, told });
    if (this.#threads.size > MAX_THREADS) {
      const oldest = this.#threads.keys().next();
      if (!oldest.done) this.forget(oldest.value);
    }
    return wait;
  }

  /** Refusals of the node so far (0: never refused, or built since). */
  failures(thread: string, ref: NodeRef): number {
    return this.#threads.get(thread)?.get(keyOf(ref))?.failures ?? 0;
  }

  /** How long the node must still wait before it is tried again (0: it may go now). */
  waitMs(thread: string, ref: NodeRef, now: number): number {
    const refusal = this.#threads.get(thread)?.get(keyOf(ref));
    return refusal ? Math.max(0, refusal.until - now) : 0;
  }

  /** The node was built: nothing to wait for any more. */
  built(thread: string, ref: NodeRef): void {
    const nodes = this.#threads.get(thread);
    const refusal = nodes?.get(keyOf(ref));
    if (!nodes || !refusal) return;
    refusal.told?.ended(true, refusal.failures + 1);
    nodes.delete(keyOf(ref));
    if (nodes.size === 0) this.#threads.delete(thread);
  }

  /** The thread was erased (or is forgotten): its nodes are gone. */
  forget(thread: string): void {
    for (const refusal of this.#threads.get(thread)?.values() ?? [])
      refusal.told?.ended(false, refusal.failures);
    this.#threads.delete(thread);
  }

  /** When the thread's first waiting node may be tried again (epoch ms), if any waits. */
  nextTry(thread: string, now: number): number | undefined {
    let next: number | undefined;
    for (const refusal of this.#threads.get(thread)?.values() ?? []) {
      if (refusal.until > now && (next === undefined || refusal.until < next)) next = refusal.until;
    }
    return next;
  }
}
