import type { JsMsg } from "@nats-io/jetstream";
import type { ChatEventKind } from "../nats/subjects.ts";
import type { DeliveryEpoch } from "./delivery-ledger.ts";
import { M } from "./metrics.ts";
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
      slot = new ThreadSlot(thread, this.#ctx, (ended, end) => this.#ended(ended, end));
      this.#slots.set(thread, slot);
      this.#ctx.metrics.set(M.actors, this.#slots.size);
    }
    return slot;
  }

  // A slot leaves the map the moment it ends, so the next event for its thread creates a fresh
  // slot that rehydrates from what the old one stored.
  // A slot that ends any other way than at rest drops events it was given: from then on no slot
  // may skip its gap read on the strength of having been given every event (DeliveryLedger).
  #ended(slot: ThreadSlot, end: SlotEnd): void {
    if (end !== "passivated" && end !== "drained") this.#ctx.deliveries.interrupt();
    if (this.#slots.get(slot.thread) === slot) this.#slots.delete(slot.thread);
    this.#ctx.metrics.set(M.actors, this.#slots.size);
  }

  /** The worker caught up: every thread's events waiting for their save linger are saved now. */
  saveLingering(appliedBy?: number): void {
    for (const slot of this.#slots.values()) slot.saveLingering(appliedBy);
  }

  /** Persists and stops actors idle for `idleMs`, so memory stays bounded by active threads. */
  sweep(idleMs: number, now = Date.now()): void {
    for (const slot of this.#slots.values()) slot.passivateIfIdle(now, idleMs);
  }

  async drain(): Promise<void> {
    await Promise.all([...this.#slots.values()].map((slot) => slot.drain()));
  }

  abandon(): void {
    for (const slot of [...this.#slots.values()]) slot.abandon();
    this.#slots.clear();
  }
}
