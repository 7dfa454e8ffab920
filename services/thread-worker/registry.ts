import type { JsMsg } from "@nats-io/jetstream";
import type { ChatEventKind } from "../nats/subjects.ts";
import type { DeliveryEpoch } from "./delivery-ledger.ts";
import { METRIC } from "./metrics.ts";
import { ThreadSlot, type SlotEnd } from "./thread-slot.ts";
import type { WorkerContext } from "./worker-context.ts";

/**
 * The threads this worker process owns, one slot (actor + queue) each, created on demand and
 * dropped when passivated. The one place that decides ownership: a scheme that splits threads
 * between several workers (e.g. consumers filtered by thread hash) plugs in here.
 */
export class ThreadRegistry {
  readonly #ctx: WorkerContext;
  readonly #slots = new Map<string, ThreadSlot>();
  /** Passivated threads with a refused node waiting: woken when it may be tried again. */
  readonly #retries = new Map<string, NodeJS.Timeout>();
  /** Partitioned: whether this worker holds the thread's partition, and when to load it again. */
  #reload: { owns: (thread: string) => boolean; lostMs: number; failedMs: number } | undefined;

  constructor(ctx: WorkerContext) {
    this.#ctx = ctx;
  }

  get size(): number {
    return this.#slots.size;
  }

  threads(): string[] {
    return [...this.#slots.keys()];
  }

  /** The live slot of a thread, if it is in memory (for tests and tools). */
  peek(thread: string): ThreadSlot | undefined {
    return this.#slots.get(thread);
  }

  /**
   * Queues a delivered chat event on its thread's slot; `epoch` is the ledger's for it, `type` the
   * event type its subject names.
   */
  deliver(thread: string, msg: JsMsg, epoch: DeliveryEpoch, type: ChatEventKind): void {
    this.#slot(thread).enqueueChat(msg, epoch, type);
  }

  /** Loads a thread that has work outstanding though no event is coming (see BusyIndex). */
  wake(thread: string): void {
    this.#slot(thread).wake();
  }

  #slot(thread: string): ThreadSlot {
    let slot = this.#slots.get(thread);
    if (!slot) {
      // Back in memory: its refused nodes are asked again on load and wait there.
      clearTimeout(this.#retries.get(thread));
      this.#retries.delete(thread);
      slot = new ThreadSlot(thread, this.#ctx, (ended, end) => this.#ended(ended, end));
      this.#slots.set(thread, slot);
      this.#ctx.metrics.set(METRIC.actors, this.#slots.size);
    }
    return slot;
  }

  /**
   * Partitioned mode: a thread of a partition held here whose slot ended without storing its
   * state at rest (another writer won the fence, or a read failed) is loaded again after
   * `lostMs` or `failedMs`. Nothing else would: its events may all be acknowledged, and a thread
   * woken for its summaries gets none. A late write of its last owner, or a replica behind, is
   * how an owner loses a thread it still holds.
   */
  reloadOwned(owns: (thread: string) => boolean, lostMs: number, failedMs: number): void {
    this.#reload = { owns, lostMs, failedMs };
  }

  // A slot leaves the map the moment it ends, so the next event for its thread creates a fresh
  // slot that rehydrates from what the old one stored.
  // A slot that ends any other way than at rest drops events it was given: from then on no slot
  // may skip its gap read on the strength of having been given every event (DeliveryLedger).
  #ended(slot: ThreadSlot, end: SlotEnd): void {
    if (end !== "passivated" && end !== "drained") this.#ctx.deliveries.interrupt();
    if (this.#slots.get(slot.thread) === slot) this.#slots.delete(slot.thread);
    this.#ctx.metrics.set(METRIC.actors, this.#slots.size);
    const retryAt = slot.retryAt;
    if (retryAt !== undefined && !this.#slots.has(slot.thread))
      this.#retryLater(slot.thread, retryAt);
    const reload = this.#reload;
    if ((end === "lost" || end === "failed") && reload?.owns(slot.thread)) {
      const ms = end === "lost" ? reload.lostMs : reload.failedMs;
      this.#retryLater(slot.thread, Date.now() + ms, () => reload.owns(slot.thread));
    }
  }

  /**
   * Wakes a passivated thread when its refused node may be tried again: no event may come to
   * bring it back, and the node would otherwise wait for the next one (or a restart).
   */
  #retryLater(thread: string, at: number, still: () => boolean = () => true): void {
    clearTimeout(this.#retries.get(thread));
    const timer = setTimeout(
      () => {
        this.#retries.delete(thread);
        if (still()) this.wake(thread);
      },
      Math.max(0, at - Date.now()),
    );
    // A retry alone does not keep the process up: a restart wakes busy threads (BusyIndex).
    timer.unref();
    this.#retries.set(thread, timer);
  }

  #stopRetries(): void {
    for (const timer of this.#retries.values()) clearTimeout(timer);
    this.#retries.clear();
  }

  /** The worker caught up: every thread's events waiting for their save linger are saved now. */
  saveLingering(appliedBy?: number): void {
    for (const slot of this.#slots.values()) slot.saveLingering(appliedBy);
  }

  /** Persists and stops actors idle for `idleMs`, so memory stays bounded by active threads. */
  sweep(idleMs: number, now = Date.now()): void {
    for (const slot of this.#slots.values()) slot.passivateIfIdle(now, idleMs);
  }

  /**
   * Drains the threads `which` selects (their partition moved to another worker): each saves
   * its state and acknowledges what it applied, then leaves memory. Their retry timers go too.
   */
  async drainWhere(which: (thread: string) => boolean): Promise<void> {
    for (const [thread, timer] of this.#retries) {
      if (!which(thread)) continue;
      clearTimeout(timer);
      this.#retries.delete(thread);
    }
    await Promise.all(
      [...this.#slots.values()].filter((slot) => which(slot.thread)).map((slot) => slot.drain()),
    );
  }

  async drain(): Promise<void> {
    this.#stopRetries();
    await Promise.all([...this.#slots.values()].map((slot) => slot.drain()));
  }

  abandon(): void {
    this.#stopRetries();
    for (const slot of [...this.#slots.values()]) slot.abandon();
    this.#slots.clear();
  }
}
