import type { JsMsg } from "@nats-io/jetstream";
import { pendingOf } from "../../shared/snapshot.ts";
import type { ThreadState } from "../../shared/thread.ts";
import type { SlotEnd } from "../../machines/thread.ts";
import type { ChatEventKind } from "../nats/subjects.ts";
import { AckLedger } from "./acks.ts";
import { ActorStateError } from "./actor-store.ts";
import { BurstApplier } from "./burst.ts";
import { ChatReadError } from "./chat-reader.ts";
import type { DeliveryEpoch } from "./delivery-ledger.ts";
import { eraseThread } from "./eraser.ts";
import { HostedActor } from "./hosted-actor.ts";
import { IdClaims } from "./id-claims.ts";
import type { IntakeCursor } from "./intake.ts";
import { errorText } from "./log.ts";
import { METRIC } from "./metrics.ts";
import { publishOutbox } from "./outbox.ts";
import { StoppedError } from "./retry.ts";
import { SlotQueue, type Item } from "./slot-queue.ts";
import { SlotTools } from "./slot-tools.ts";
import { SnapshotSchedule } from "./snapshot-schedule.ts";
import { StoredState } from "./stored-state.ts";
import type { WorkerContext } from "./worker-context.ts";

/**
 * One thread's lifecycle: load, loop, drain, passivate, end. Events are applied strictly one
 * after the other, in delivery order, by a single loop; a burst of queued events is applied, its
 * effects made durable (free nodes on HISTORY, actor state in KV) and only then acknowledged,
 * with one state write per burst. Summaries run beside the loop and come back through the same
 * queue. The lifecycle's states are the chart's (its `slot` region: open, saving, passivating,
 * draining, ended), which the slot tells of each step and reads back; it keeps only its
 * scheduling (the loop running, a kick asked). The parts it drives each have a file: the actor it
 * hosts, the queue, a burst, intake, id claims, acks, the stored state, the snapshot schedule,
 * the eraser and rejections.
 */
export class ThreadSlot {
  readonly thread: string;
  readonly #ctx: WorkerContext;
  readonly #onEnd: (slot: ThreadSlot, end: SlotEnd) => void;
  readonly #onRest: (slot: ThreadSlot) => void;
  /** Stopped when the slot is abandoned: every retry loop and wait stops at once. */
  readonly #tools: SlotTools;
  readonly #queue = new SlotQueue();
  readonly #hosted: HostedActor;
  readonly #ids: IdClaims;
  readonly #acks: AckLedger;
  readonly #snapshots: SnapshotSchedule;
  readonly #stored: StoredState;
  readonly #bursts: BurstApplier;
  /** The scheduled kick, one function per slot rather than a closure per kick. */
  readonly #kicked: () => void;
  /** Set when the slot passivates with refused nodes waiting: when to try the first again. */
  #retryAt: number | undefined;

  #running: Promise<void> | undefined;
  #kickScheduled = false;
  #lastActivity = Date.now();

  /** Highest CHAT sequence handled (persisted with the state), and the delivery epoch joined. */
  readonly #cursor: IntakeCursor;
  /** Woken because the busy index lists the thread (not by an event). */
  #woken = false;

  // A slot is made for every thread delivered: its parts share the slot's tools, and its
  // callbacks are made here, bound or unnamed (no per-slot spread or named closure, which tsx
  // wraps in a defineProperty each). `onRest`: the loop has nothing left to do for now.
  constructor(
    thread: string,
    ctx: WorkerContext,
    onEnd: (slot: ThreadSlot, end: SlotEnd) => void,
    onRest: (slot: ThreadSlot) => void = () => {},
  ) {
    this.thread = thread;
    this.#ctx = ctx;
    this.#onEnd = onEnd;
    this.#onRest = onRest;
    this.#cursor = { seen: 0, joined: ctx.deliveries.current };
    this.#kicked = () => {
      this.#kickScheduled = false;
      this.#kickNow();
    };
    const tools = (this.#tools = new SlotTools(ctx, thread));
    this.#hosted = new HostedActor(ctx, thread, (item) => this.#enqueue(item));
    this.#ids = new IdClaims(tools);
    this.#acks = new AckLedger(ctx, () => {
      // Neither draining nor passivating take it: their final writes save what it would.
      this.#hosted.host({ type: "save.due" });
      this.#kick();
    });
    this.#snapshots = new SnapshotSchedule(tools, () => this.#kick(), this.#cursor);
    const checkAlive = this.#checkAlive.bind(this);
    this.#stored = new StoredState(tools, this.#acks, this.#ids, this.#snapshots, checkAlive);
    this.#bursts = new BurstApplier({
      tools,
      hosted: this.#hosted,
      cursor: this.#cursor,
      acks: this.#acks,
      ids: this.#ids,
      snapshots: this.#snapshots,
      save: this.#save.bind(this),
      erase: this.#erase.bind(this),
      publishOutbox: this.#publishOutbox.bind(this),
      checkAlive,
    });
  }

  /** How the slot ended (the chart's `slot.ended`); undefined while it has not. */
  get ended(): SlotEnd | undefined {
    return this.#hosted.ended;
  }

  /** The thread's state, for tests and tools; undefined before the actor is loaded. */
  get core(): ThreadState | undefined {
    return this.#hosted.core;
  }

  /**
   * Loads the actor without an event: its outstanding summaries are asked again. Called for the
   * threads the busy index lists, so the slot knows its thread is listed.
   */
  wake(): void {
    this.#woken = true;
    this.#lastActivity = Date.now();
    this.#kick();
  }

  /** A delivered event of this thread; `type` is the event type its subject names. */
  enqueueChat(msg: JsMsg, epoch: DeliveryEpoch, type: ChatEventKind): void {
    this.#enqueue({ kind: "chat", msg, epoch, type });
  }

  #enqueue(item: Item): void {
    if (this.#hosted.ended) return;
    this.#queue.push(item);
    this.#lastActivity = Date.now();
    this.#kick();
  }

  /**
   * When this thread, passivated, must come back to try a refused node again (epoch ms); the
   * registry wakes it then. Undefined when no node of it waits.
   */
  get retryAt(): number | undefined {
    return this.#hosted.ended === "passivated" ? this.#retryAt : undefined;
  }

  // -------------------------------------------------------------------------------------------
  // The loop

  /**
   * Starts the loop on the next turn, together with every other slot that has work then. Not
   * while draining: drain() alone drives the loop, and its final writes run outside it.
   */
  #kick(): void {
    if (this.#running || this.#kickScheduled) return;
    const slot = this.#hosted.slot;
    if (slot === "ended" || slot === "draining") return;
    this.#kickScheduled = true;
    this.#ctx.nextTurn.run(this.#kicked);
  }

  #kickNow(): void {
    if (this.#running || this.#hosted.ended) return;
    this.#running = this.#loop()
      .catch((err: unknown) => this.#crashed(err))
      .finally(() => {
        this.#running = undefined;
        const slot = this.#hosted.slot;
        if (slot === "ended") return;
        const work = this.#queue.length > 0 && !this.#holdingOnly();
        if (work || this.#snapshots.isDue || slot === "saving") this.#kick();
        if (!this.#kickScheduled) this.#onRest(this);
      });
  }

  async #loop(): Promise<void> {
    const hosted = this.#hosted;
    if (!hosted.loaded) await this.#load();
    for (;;) {
      const slot = hosted.slot;
      if (slot === "ended") return;
      const items =
        this.#queue.length > 0
          ? this.#queue.next(hosted.backlogged(), this.#ctx.maxBurst, this.#ctx.metrics)
          : [];
      if (items.length > 0) {
        await this.#bursts.apply(items);
      } else if (this.#snapshots.isDue) {
        this.#snapshots.isDue = false;
        if (this.#snapshots.wanted) await this.#writeSnapshot();
      } else if (slot === "saving") {
        hosted.host({ type: "save.started" });
        if (hosted.dirty) await this.#save();
        else this.#acks.ackStored();
      } else if (slot === "passivating") {
        await this.#passivateNow();
      } else {
        return;
      }
    }
  }

  /** The passivation asked: final writes, then out of memory unless events came meanwhile. */
  async #passivateNow(): Promise<void> {
    const hosted = this.#hosted;
    const forRoom = hosted.forRoom;
    try {
      await this.#finalWrites();
      // Nothing arrived during the writes: the thread is at rest and can leave memory.
      if (this.#queue.length === 0 && hosted.jobsBusy() === 0 && (await this.#stopWaitingOut())) {
        this.#ctx.metrics.add(METRIC.passivations);
        if (forRoom) this.#ctx.metrics.add(METRIC.capPassivations);
        this.#end("passivated");
      }
    } finally {
      // Given up (or failed): open again, unless a drain took over meanwhile.
      if (hosted.slot === "passivating") hosted.host({ type: "passivate.cancel" });
    }
  }

  /**
   * Stops jobs that only wait out a refusal's backoff, so the thread can leave memory; the
   * registry wakes it when the first may be tried (HostedActor.stopWaitingOut). False when
   * events came meanwhile: the thread stays, its nodes asked again.
   */
  async #stopWaitingOut(): Promise<boolean> {
    const retryAt = await this.#hosted.stopWaitingOut(() => this.#queue.length === 0);
    if (retryAt === false) return false;
    this.#retryAt = retryAt;
    return true;
  }

  /** The queue holds only chat events that the backlog keeps waiting. */
  #holdingOnly(): boolean {
    return this.#hosted.backlogged() && this.#queue.onlyChat();
  }

  #crashed(err: unknown): void {
    if (err instanceof StoppedError || this.#tools.stopped) return;
    const log = this.#ctx.log;
    if (err instanceof ActorStateError && err.code === "OWNERSHIP_LOST") {
      log.warn(err.message, { thread: this.thread });
      this.#stopNow("lost");
      return;
    }
    // A bug, a record that cannot be read back, or a state too large to store. Nothing of the
    // burst was acknowledged: its events come back after the ack wait to a fresh actor rebuilt
    // from the stored state, so nothing is lost; the error says what to fix if it persists.
    this.#ctx.metrics.add(METRIC.threadErrors);
    log.error(`thread '${this.thread}' stopped: ${errorText(err)}`, {
      thread: this.thread,
      ...(err instanceof Error && !(err instanceof ActorStateError || err instanceof ChatReadError)
        ? { stack: err.stack }
        : {}),
    });
    this.#stopNow("failed");
  }

  #end(end: SlotEnd): void {
    if (this.#hosted.ended) {
      // A save that failed after the end puts its events back: count them given up too.
      this.#ctx.deliveries.released(this.#acks.dropAll());
      return;
    }
    // Shown in the chart (`slot.ended.<end>`), then the actor leaves memory.
    this.#hosted.end(end);
    // Events given up unacknowledged come back to a worker after the ack wait.
    this.#ctx.deliveries.released(this.#acks.dropAll() + this.#queue.clear());
    this.#snapshots.cancel();
    this.#acks.cancel();
    this.#onEnd(this, end);
  }

  #stopNow(end: SlotEnd): void {
    this.#tools.stop();
    void this.#hosted.stopJobs();
    this.#end(end);
  }

  #checkAlive(): void {
    // An abort always ends the slot (#stopNow), in the same turn: the end is the one check.
    if (this.#hosted.ended) throw new StoppedError(`thread '${this.thread}'`);
  }

  // -------------------------------------------------------------------------------------------
  // Lifecycle driven by the registry

  /**
   * The worker has caught up (no delivery for a while and none waiting in the consumer): chat
   * events waiting for their save linger are saved, and so acknowledged, now. No more events are
   * coming to share that save, so waiting would only delay their acks and the snapshot. Crowded
   * (DeliveryLedger.lingerShare), only a slot whose oldest unsaved event arrived by `appliedBy`.
   */
  saveLingering(appliedBy = Number.POSITIVE_INFINITY): void {
    const since = this.#acks.unsavedSince;
    if (since === undefined || since > appliedBy) return;
    const slot = this.#hosted.slot;
    if (slot === "ended" || slot === "draining") return;
    this.#acks.saveNow();
  }

  /** Asks the loop to persist and stop the actor if it has been idle for `idleMs`. */
  passivateIfIdle(now: number, idleMs: number): void {
    if (this.#running || this.#queue.length > 0 || this.#hosted.jobsBusy() > 0) return;
    if (now - this.#lastActivity < idleMs) return;
    const slot = this.#hosted.slot;
    if (slot === "ended" || slot === "draining") return;
    this.#hosted.host({ type: "passivate" });
    this.#kick();
  }

  /**
   * Loaded and at rest: nothing queued or about to run, every applied event saved and
   * acknowledged, no summary asked, running or waiting out a refusal, no cut or merge waiting,
   * no free node unpublished, no erase under way. Passivating such a slot only writes its
   * snapshot: there is nothing to lose, and nothing it would apply again when re-loaded.
   */
  get evictable(): boolean {
    if (
      this.#hosted.slot !== "open" ||
      this.#running ||
      this.#kickScheduled ||
      this.#hosted.erasing ||
      !this.#hosted.loaded ||
      this.#queue.length > 0 ||
      this.#acks.count > 0 ||
      this.#acks.unsaved ||
      this.#hosted.dirty ||
      this.#hosted.jobsActive() > 0
    )
      return false;
    const core = this.#hosted.state();
    const pending = pendingOf(core);
    return pending.jobs === 0 && pending.cuts === 0 && !pending.merging && core.outbox.length === 0;
  }

  /** A passivation was asked and has neither ended the slot nor been given up. */
  get passivating(): boolean {
    return this.#hosted.slot === "passivating";
  }

  /**
   * Passivates the slot now, through the idle path, to make room under the actor cap; false
   * (and nothing asked) unless it is `evictable`.
   */
  passivate(): boolean {
    if (!this.evictable) return false;
    this.#hosted.host({ type: "passivate", forRoom: true });
    this.#kick();
    return true;
  }

  /**
   * Graceful stop: summaries in flight are abandoned (they stay in the saved state and are asked
   * again after the next start), queued events are applied, state and snapshot are written.
   * `handover` (the thread's partition moves to another member): chat events not yet applied are
   * left unacknowledged instead, for the next owner, whose consumer starts at this one's ack
   * floor and delivers them at once. Applying a backlog first held a member's partitions back
   * from the members joining it for as long as the backlog took (14 s in a join under load).
   */
  async drain(handover = false): Promise<void> {
    this.#hosted.host({ type: "drain" });
    if (handover) this.#ctx.deliveries.released(this.#queue.dropChat());
    await this.#hosted.stopJobs();
    this.#snapshots.cancel();
    this.#acks.cancel();
    // Queued events are applied first (their loop may not have started yet).
    this.#kickNow();
    while (this.#running) await this.#running;
    if (this.#hosted.ended) return;
    try {
      await this.#finalWrites();
      this.#end("drained");
    } catch (err) {
      this.#crashed(err);
    }
  }

  /** Crash simulation and hard stop: nothing more is written or acknowledged. */
  abandon(): void {
    this.#stopNow("abandoned");
  }

  async #finalWrites(): Promise<void> {
    if (!this.#hosted.loaded) return;
    this.#snapshots.cancel();
    this.#acks.cancel();
    if (this.#hosted.dirty) await this.#save();
    else this.#acks.ackStored();
    // Whole: the stored snapshot shows the counts of what the thread leaves outstanding.
    if (this.#snapshots.wanted) await this.#writeSnapshot(true);
  }

  // -------------------------------------------------------------------------------------------
  // Loading

  /**
   * Creates the actor and gives it the persisted state when there is one: `loading` while a
   * stored thread is read back (the inspector shows it); a thread never stored starts loaded.
   */
  async #load(): Promise<void> {
    const hosted = this.#hosted;
    const { entry, restored } = await this.#stored.read(() => hosted.create());
    if (restored) this.#cursor.seen = restored.seen;
    this.#checkAlive();
    // A record this worker wrote from getPersistedSnapshot(), of any snapshot version: only its
    // core is taken (the chart's state follows from it, `erasing` from the record's flag).
    if (restored) hosted.load(restored.snapshot.context.core, restored.erasing);
    else hosted.createNew();
    if (!restored) {
      // A thread is listed only once a state of it with work outstanding is stored (#save), so a
      // thread with no entry at all is not listed: no request for each new thread. One woken from
      // the list (its state deleted by hand, say) or with a deleted entry is unlisted as before.
      if (entry === null && !this.#woken) this.#stored.unlisted();
      else await this.#stored.syncBusy(hosted.state());
      return;
    }
    if (hosted.erasing) {
      // Crashed in the middle of a thread.deleted: finish its purges first.
      await this.#erase();
      await this.#save();
      return;
    }
    // Summaries that were in flight are asked again (HISTORY answers those already built);
    // free nodes not yet published are published now.
    this.#ids.seed(hosted.state());
    hosted.send({ type: "jobs.resume" });
    await this.#publishOutbox();
    await this.#ids.flush(hosted.state());
    if (hosted.dirty) await this.#save();
    else await this.#stored.syncBusy(hosted.state());
    this.#snapshots.wanted = true;
    this.#snapshots.isDue = true;
  }

  // -------------------------------------------------------------------------------------------
  // Durable effects

  /** Publishes the free nodes waiting in the outbox to HISTORY, then tells the actor. */
  async #publishOutbox(): Promise<void> {
    const outbox = this.#hosted.state().outbox;
    if (outbox.length === 0) return;
    await publishOutbox(this.#tools, outbox);
    this.#hosted.send({ type: "outbox.published", count: outbox.length });
  }

  #save(): Promise<void> {
    return this.#stored.save(this.#hosted, this.#cursor.seen, this.#hosted.erasing);
  }

  /**
   * thread.deleted: the tombstone (deleted, `erasing`) is saved first so a crash finishes the
   * job on restart; summaries in flight are stopped so none lands after the purge; then the
   * eraser purges the thread's streams (eraser.ts) and the chart moves on to `deleted`.
   */
  async #erase(): Promise<void> {
    await this.#hosted.dropJobs();
    // Its nodes are gone with it: a new thread of the same id starts with nothing refused.
    this.#ctx.refusals.forget(this.thread);
    this.#snapshots.forget();
    await this.#save();
    // The delete's sequence: the tombstone's core keeps it, applied now or reloaded.
    await eraseThread(this.#tools, this.#cursor.seen, this.#hosted.state().seq);
    this.#snapshots.revision = 0;
    this.#hosted.send({ type: "erase.done" });
  }

  async #writeSnapshot(whole = false): Promise<void> {
    // Chat events not stored yet: the save that stores them writes the snapshot.
    if (this.#acks.unsaved) return;
    await this.#snapshots.write(this.#hosted.state(), whole);
  }
}
