import type { JsMsg } from "@nats-io/jetstream";
import type { SlotEnd } from "../../machines/thread.ts";
import type { ChatEventKind } from "../nats/subjects.ts";
import { ActorPool } from "./actor-pool.ts";
import type { DeliveryEpoch } from "./delivery-ledger.ts";
import { METRIC } from "./metrics.ts";
import { ThreadSlot } from "./thread-slot.ts";
import type { WorkerContext } from "./worker-context.ts";

/** What the registry hands a thread's slot: a delivered chat event, or a wake. */
type SlotAction = { msg: JsMsg; epoch: DeliveryEpoch; type: ChatEventKind } | "wake";

/**
 * The threads this worker process owns, one slot (actor + queue) each, created on demand and
 * dropped when passivated; at most `maxActors` live at once (ActorPool). The one place that
 * decides ownership: a scheme that splits threads between several workers (e.g. consumers
 * filtered by thread hash) plugs in here.
 */
export class ThreadRegistry {
  readonly #ctx: WorkerContext;
  readonly #pool: ActorPool<ThreadSlot, SlotAction>;
  /** Passivated threads with a refused node waiting: woken when it may be tried again. */
  readonly #retries = new Map<string, NodeJS.Timeout>();
  /** Partitioned: whether this worker holds the thread's partition, and when to load it again. */
  #reload: { owns: (thread: string) => boolean; lostMs: number; failedMs: number } | undefined;

  /** `maxActors`: live slots at most (OUTLINE_MAX_ACTORS); Infinity for no cap. */
  constructor(ctx: WorkerContext, maxActors = Number.POSITIVE_INFINITY) {
    this.#ctx = ctx;
    const ended = (slot: ThreadSlot, end: SlotEnd) => this.#ended(slot, end);
    const pool: ActorPool<ThreadSlot, SlotAction> = new ActorPool({
      cap: maxActors,
      create: (thread) => {
        // Back in memory: its refused nodes are asked again on load and wait there.
        clearTimeout(this.#retries.get(thread));
        this.#retries.delete(thread);
        const slot = new ThreadSlot(thread, ctx, ended, (rested) => pool.rested(rested));
        ctx.metrics.set(METRIC.actors, pool.size + 1);
        return slot;
      },
      give: (slot, action) => {
        if (action === "wake") slot.wake();
        else slot.enqueueChat(action.msg, action.epoch, action.type);
      },
      later: (fn) => ctx.nextTurn.run(fn),
      evicted: () => {},
    });
    this.#pool = pool;
  }

  get size(): number {
    return this.#pool.size;
  }

  /** Live slots at most (Infinity: no cap). */
  get maxActors(): number {
    return this.#pool.cap;
  }

  /** Threads whose delivered events wait for room under the cap. */
  get waiting(): number {
    return this.#pool.waiting;
  }

  threads(): string[] {
    return [...this.#pool.slots()].map((slot) => slot.thread);
  }

  /** The live slot of a thread, if it is in memory (for tests and tools). */
  peek(thread: string): ThreadSlot | undefined {
    return this.#pool.peek(thread);
  }

  /**
   * Queues a delivered chat event on its thread's slot; `epoch` is the ledger's for it, `type` the
   * event type its subject names.
   */
  deliver(thread: string, msg: JsMsg, epoch: DeliveryEpoch, type: ChatEventKind): void {
    this.#pool.use(thread, { msg, epoch, type });
  }

  /** Loads a thread that has work outstanding though no event is coming (see BusyIndex). */
  wake(thread: string): void {
    this.#pool.use(thread, "wake");
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
    this.#pool.ended(slot);
    this.#ctx.metrics.set(METRIC.actors, this.#pool.size);
    const retryAt = slot.retryAt;
    if (retryAt !== undefined && !this.#pool.peek(slot.thread))
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
    for (const slot of this.#pool.slots()) slot.saveLingering(appliedBy);
  }

  /**
   * Persists and stops actors idle for `idleMs`, so memory stays bounded by active threads; and
   * makes room under the cap for threads waiting, should a slot have come to rest unannounced.
   */
  sweep(idleMs: number, now = Date.now()): void {
    for (const slot of this.#pool.slots()) slot.passivateIfIdle(now, idleMs);
    this.#pool.makeRoom();
  }

  /**
   * Drains the threads `which` selects (their partition moved to another worker): each saves
   * its state and acknowledges what it applied, then leaves memory; events it holds and has not
   * applied go to the next owner (ThreadSlot.drain). Their retry timers go too.
   */
  async drainWhere(which: (thread: string) => boolean): Promise<void> {
    for (const [thread, timer] of this.#retries) {
      if (!which(thread)) continue;
      clearTimeout(timer);
      this.#retries.delete(thread);
    }
    // Threads waiting for room come in over the cap: their drain leaves their events, as the
    // others', to the next owner.
    this.#pool.admitAll(which);
    await Promise.all(
      [...this.#pool.slots()].filter((slot) => which(slot.thread)).map((slot) => slot.drain(true)),
    );
  }

  async drain(): Promise<void> {
    this.#stopRetries();
    this.#pool.admitAll();
    await Promise.all([...this.#pool.slots()].map((slot) => slot.drain()));
  }

  abandon(): void {
    this.#stopRetries();
    const dropped = this.#pool.dropWaiting().filter((action) => action !== "wake").length;
    // Given up unacknowledged, as a slot's queue: they come back after the ack wait.
    if (dropped > 0) {
      this.#ctx.deliveries.interrupt();
      this.#ctx.deliveries.released(dropped);
    }
    for (const slot of [...this.#pool.slots()]) slot.abandon();
    this.#pool.clear();
  }
}
