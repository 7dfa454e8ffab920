import type { JsMsg } from "@nats-io/jetstream";
import { createActor, type Actor } from "xstate";
import { InvariantError } from "../../shared/errors.ts";
import type { IdClaim } from "../../shared/message-ids.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import { sameThreadSettings, threadSettingsOf } from "../../shared/settings.ts";
import type { Effect } from "../../shared/step.ts";
import { findBuilt, type ThreadState } from "../../shared/thread.ts";
import { threadMachine, type ThreadMachine } from "../../machines/thread.ts";
import type { ChatEventKind } from "../nats/subjects.ts";
import { AckLedger } from "./acks.ts";
import {
  ActorStateError,
  parsePersisted,
  restoreRecord,
  saveRecord,
  toPersisted,
  type PersistedActor,
} from "./actor-store.ts";
import { BusyIndex } from "./busy-index.ts";
import { ChatReadError } from "./chat-reader.ts";
import type { DeliveryEpoch } from "./delivery-ledger.ts";
import { eraseThread, purgeChat } from "./eraser.ts";
import { IdClaims } from "./id-claims.ts";
import { intake, type IntakeCursor } from "./intake.ts";
import { errorText } from "./log.ts";
import { METRIC } from "./metrics.ts";
import { publishOutbox } from "./outbox.ts";
import { persistedSnapshotOf, type ShellKey } from "./persisted-shell.ts";
import { Rejections } from "./rejections.ts";
import { StoppedError } from "./retry.ts";
import { SlotQueue, type ChatEntry, type Item } from "./slot-queue.ts";
import { slotTools, type SlotTools } from "./slot-tools.ts";
import { SnapshotSchedule } from "./snapshot-schedule.ts";
import { SummaryJobs, type RequestedJob } from "./summary-jobs.ts";
import type { WorkerContext } from "./worker-context.ts";

/** The label of an applied message, made once rather than per message. */
const MESSAGE_EVENT = { kind: "message" } as const;

type Skipped = Extract<Effect, { type: "skipped" }>;

export type SlotEnd = "passivated" | "drained" | "lost" | "failed" | "abandoned";

/**
 * One thread's lifecycle: load, loop, drain, passivate, end. Events are applied strictly one
 * after the other, in delivery order, by a single loop; a burst of queued events is applied, its
 * effects made durable (free nodes on HISTORY, actor state in KV) and only then acknowledged,
 * with one state write per burst. Summaries run beside the loop and come back through the same
 * queue. The parts it drives each have a file: the queue, intake, id claims, acks, the snapshot
 * schedule, the eraser and rejections.
 */
export class ThreadSlot {
  readonly thread: string;
  readonly #ctx: WorkerContext;
  readonly #onEnd: (slot: ThreadSlot, end: SlotEnd) => void;
  /** Aborted when the slot is abandoned: every retry loop and wait stops at once. */
  readonly #abort = new AbortController();
  readonly #tools: SlotTools;
  readonly #queue = new SlotQueue();
  readonly #ids: IdClaims;
  readonly #acks: AckLedger;
  readonly #snapshots: SnapshotSchedule;
  readonly #rejections: Rejections;
  #actor: Actor<ThreadMachine> | undefined;
  /** The stored state is in the actor (it left `loading`). */
  #loaded = false;
  /** Made on the first summary asked for: most threads of a busy platform never ask for one. */
  #jobs: SummaryJobs | undefined;
  /** Set when the slot passivates with refused nodes waiting: when to try the first again. */
  #retryAt: number | undefined;

  #running: Promise<void> | undefined;
  #kickScheduled = false;
  #ended: SlotEnd | undefined;
  #lastActivity = Date.now();

  /** Highest CHAT sequence handled (persisted with the state), and the delivery epoch joined. */
  #cursor: IntakeCursor;
  #erasing = false;
  #actorRevision = 0;
  /** Whether the busy index lists the thread; unknown until the first check after load. */
  #busyListed: boolean | undefined;
  /** Woken because the busy index lists the thread (not by an event). */
  #woken = false;
  /** XState's part of the persisted snapshot, kept while it does not change (persistedSnapshotOf). */
  #persistedShell: { key?: ShellKey; shell?: PersistedActor } = {};

  // Set by the machine's effects while an event is applied; read right after.
  #requested: SummaryJob[] = [];
  #skips: Skipped[] = [];
  #erasedAt: number | undefined;
  #changed = false;
  /** The state differs from the stored record. */
  #dirty = false;
  #saveDue = false;
  #passivateWanted = false;

  constructor(thread: string, ctx: WorkerContext, onEnd: (slot: ThreadSlot, end: SlotEnd) => void) {
    this.thread = thread;
    this.#ctx = ctx;
    this.#onEnd = onEnd;
    this.#cursor = { seen: 0, joined: ctx.deliveries.current };
    this.#tools = slotTools(ctx, thread, this.#abort.signal);
    this.#ids = new IdClaims(this.#tools);
    this.#rejections = new Rejections(this.#tools);
    this.#acks = new AckLedger(ctx, () => {
      this.#saveDue = true;
      this.#kick();
    });
    this.#snapshots = new SnapshotSchedule(this.#tools, () => this.#kick());
  }

  /** An effect the machine emits while an event is applied; read right after `send`. */
  readonly #onEffect = (effect: Effect): void => {
    if (effect.type === "requestSummary") this.#requested.push(effect.job);
    else if (effect.type === "snapshotChanged") this.#changed = true;
    else if (effect.type === "skipped") this.#skips.push(effect);
    else this.#erasedAt = effect.seq;
  };

  get ended(): SlotEnd | undefined {
    return this.#ended;
  }

  /** The thread's state, for tests and tools; undefined before the actor is loaded. */
  get core(): ThreadState | undefined {
    return this.#loaded ? this.#actor?.getSnapshot().context.core : undefined;
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
    if (this.#ended) return;
    this.#queue.push(item);
    this.#lastActivity = Date.now();
    this.#kick();
  }

  /**
   * The jobs to stop: made now if there are none yet, so a summary the rest of a burst asks for
   * after the stop goes to stopped jobs and is not started.
   */
  #stoppedJobs(): SummaryJobs {
    return (this.#jobs ??= this.#newJobs());
  }

  /** Jobs doing something: not only waiting out a refusal's backoff (that keeps no thread). */
  #jobsBusy(): number {
    return this.#jobs ? this.#jobs.active - this.#jobs.waitingOut : 0;
  }

  /**
   * When this thread, passivated, must come back to try a refused node again (epoch ms); the
   * registry wakes it then. Undefined when no node of it waits.
   */
  get retryAt(): number | undefined {
    return this.#ended === "passivated" ? this.#retryAt : undefined;
  }

  #newJobs(): SummaryJobs {
    return new SummaryJobs({
      summarizer: this.#ctx.summarizer,
      limiter: this.#ctx.limiter,
      history: this.#ctx.history,
      metrics: this.#ctx.metrics,
      log: this.#ctx.log,
      timing: this.#ctx.jobTiming,
      refusals: this.#ctx.refusals,
      group: this.#ctx.settings.group ?? 1,
      built: (ref, text) => this.#enqueue({ kind: "built", ref, text }),
      failed: (ref, reason) => this.#enqueue({ kind: "failed", ref, reason }),
    });
  }

  // -------------------------------------------------------------------------------------------
  // The loop

  /** Starts the loop on the next turn, together with every other slot that has work then. */
  #kick(): void {
    if (this.#running || this.#ended || this.#kickScheduled) return;
    this.#kickScheduled = true;
    this.#ctx.nextTurn.run(this.#kicked);
  }

  /** The scheduled kick, one function per slot rather than a closure per kick. */
  readonly #kicked = (): void => {
    this.#kickScheduled = false;
    this.#kickNow();
  };

  #kickNow(): void {
    if (this.#running || this.#ended) return;
    this.#running = this.#loop()
      .catch((err: unknown) => this.#crashed(err))
      .finally(() => {
        this.#running = undefined;
        const work = this.#queue.length > 0 && !this.#holdingOnly();
        if (!this.#ended && (work || this.#snapshots.isDue || this.#saveDue)) this.#kick();
      });
  }

  async #loop(): Promise<void> {
    if (!this.#loaded) await this.#load();
    while (!this.#ended) {
      const items =
        this.#queue.length > 0
          ? this.#queue.next(this.#backlogged(), this.#ctx.maxBurst, this.#ctx.metrics)
          : [];
      if (items.length > 0) {
        await this.#burst(items);
      } else if (this.#snapshots.isDue) {
        this.#snapshots.isDue = false;
        if (this.#snapshots.wanted) await this.#writeSnapshot();
      } else if (this.#saveDue) {
        this.#saveDue = false;
        if (this.#dirty) await this.#save();
        else this.#acks.ackStored();
      } else if (this.#passivateWanted) {
        this.#passivateWanted = false;
        await this.#finalWrites();
        // Nothing arrived during the writes: the thread is at rest and can leave memory.
        if (this.#queue.length === 0 && this.#jobsBusy() === 0 && (await this.#stopWaitingOut())) {
          this.#ctx.metrics.add(METRIC.passivations);
          this.#end("passivated");
        }
      } else {
        return;
      }
    }
  }

  /**
   * Stops jobs that only wait out a refusal's backoff, so the thread can leave memory: their
   * nodes stay in flight in the saved state, are asked again when the thread is loaded (the
   * worker's Refusals keep what is left of the wait), and the registry wakes the thread when the
   * first may be tried. False when events came meanwhile: the thread stays, its nodes asked again.
   */
  async #stopWaitingOut(): Promise<boolean> {
    const jobs = this.#jobs;
    if (!jobs || jobs.active === 0) return true;
    // A wait that ends this very moment (its timer not fired yet) is woken at once.
    this.#retryAt = this.#ctx.refusals.nextTry(this.thread, Date.now()) ?? Date.now();
    this.#jobs = undefined;
    await jobs.stop();
    if (this.#queue.length === 0) return true;
    this.#retryAt = undefined;
    this.#send({ type: "jobs.resume" });
    return false;
  }

  /** The chart holds a backlog: new chat events must wait in the stream. */
  #backlogged(): boolean {
    return this.#actor?.getSnapshot().value === "backlog";
  }

  /** The queue holds only chat events that the backlog keeps waiting. */
  #holdingOnly(): boolean {
    return this.#backlogged() && this.#queue.onlyChat();
  }

  #crashed(err: unknown): void {
    if (err instanceof StoppedError || this.#abort.signal.aborted) return;
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
    if (this.#ended) {
      // A save that failed after the end puts its events back: count them given up too.
      this.#ctx.deliveries.released(this.#acks.dropAll());
      return;
    }
    this.#ended = end;
    // Events given up unacknowledged come back to a worker after the ack wait.
    this.#ctx.deliveries.released(this.#acks.dropAll() + this.#queue.clear());
    this.#snapshots.cancel();
    this.#acks.cancel();
    // Shown in the chart: the state is stored and the actor leaves memory.
    if (end === "passivated") this.#actor?.send({ type: "passivate" });
    this.#actor?.stop();
    this.#onEnd(this, end);
  }

  #stopNow(end: SlotEnd): void {
    this.#abort.abort();
    void this.#stoppedJobs().stop();
    this.#end(end);
  }

  #checkAlive(): void {
    // An abort always ends the slot (#stopNow), in the same turn: the end is the one check.
    if (this.#ended) throw new StoppedError(`thread '${this.thread}'`);
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
    if (this.#ended || since === undefined || since > appliedBy) return;
    this.#acks.saveNow();
  }

  /** Asks the loop to persist and stop the actor if it has been idle for `idleMs`. */
  passivateIfIdle(now: number, idleMs: number): void {
    if (this.#ended || this.#running || this.#queue.length > 0 || this.#jobsBusy() > 0) return;
    if (now - this.#lastActivity < idleMs) return;
    this.#passivateWanted = true;
    this.#kick();
  }

  /**
   * Graceful stop: summaries in flight are abandoned (they stay in the saved state and are asked
   * again after the next start), queued events are applied, state and snapshot are written.
   */
  async drain(): Promise<void> {
    await this.#stoppedJobs().stop();
    this.#snapshots.cancel();
    this.#acks.cancel();
    // Queued events are applied first (their loop may not have started yet).
    this.#kickNow();
    while (this.#running) await this.#running;
    if (this.#ended) return;
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
    if (!this.#loaded) return;
    this.#snapshots.cancel();
    this.#acks.cancel();
    if (this.#dirty) await this.#save();
    else this.#acks.ackStored();
    if (this.#snapshots.wanted) await this.#writeSnapshot();
  }

  // -------------------------------------------------------------------------------------------
  // Loading

  /** Creates the actor (`loading`) and gives it the persisted state when there is one. */
  async #load(): Promise<void> {
    const { buckets, jsm, names } = this.#ctx;
    const retry = this.#tools.retry;
    this.#actor ??= this.#createActor();
    const entry = await retry("read actor state", () => buckets.actors.get(this.thread));
    let snapshot: PersistedActor | undefined;
    if (entry?.operation === "PUT") {
      const record = parsePersisted(this.thread, entry.value, buckets.names.actors);
      snapshot = await retry(
        "read the tail and the built nodes back from CHAT and HISTORY",
        () => restoreRecord(jsm, names, this.#ctx.history, record, buckets.names.actors),
        (err) => err instanceof ChatReadError || err instanceof ActorStateError,
      );
      this.#cursor.seen = record.seen;
      this.#erasing = record.erasing;
      this.#ctx.metrics.add(METRIC.rehydrations);
    }
    this.#actorRevision = entry?.revision ?? 0;
    // A thread never stored has no snapshot of ours either: its first write creates the key (a
    // snapshot someone else wrote is met by the writer's fence, snapshot-writer.ts).
    const shown = entry
      ? await retry("read snapshot", () => buckets.snapshots.get(this.thread))
      : null;
    this.#snapshots.revision = shown?.revision ?? 0;
    this.#checkAlive();
    // A record this worker wrote from getPersistedSnapshot(), of any snapshot version: only its
    // core is taken (the chart's state follows from it).
    this.#actor.send(
      snapshot
        ? { type: "loaded", core: snapshot.context.core, erasing: this.#erasing }
        : { type: "loaded" },
    );
    this.#loaded = true;
    if (!snapshot) {
      // A thread is listed only once a state of it with work outstanding is stored (#save), so a
      // thread with no entry at all is not listed: no request for each new thread. One woken from
      // the list (its state deleted by hand, say) or with a deleted entry is unlisted as before.
      if (entry === null && !this.#woken) this.#busyListed = false;
      else await this.#syncBusy();
      return;
    }
    if (this.#erasing) {
      // Crashed in the middle of a thread.deleted: finish its purges first.
      this.#erasedAt = this.#state().seq;
      await this.#erase();
      await this.#save();
      return;
    }
    // Summaries that were in flight are asked again (HISTORY answers those already built);
    // free nodes not yet published are published now.
    this.#ids.seed(this.#state());
    this.#send({ type: "jobs.resume" });
    await this.#publishOutbox();
    await this.#ids.flush(this.#state());
    if (this.#dirty) await this.#save();
    else await this.#syncBusy();
    this.#snapshots.wanted = true;
    this.#snapshots.isDue = true;
  }

  #createActor(): Actor<ThreadMachine> {
    const actor = createActor(threadMachine, {
      input: {
        thread: this.thread,
        settings: this.#ctx.settings,
        hosted: true,
        backlogLimit: this.#ctx.backlogLimit,
      },
      ...(this.#ctx.inspect ? { inspect: this.#ctx.inspect } : {}),
    });
    actor.on("*", this.#onEffect);
    return actor.start();
  }

  // -------------------------------------------------------------------------------------------
  // Applying a burst

  #state(): ThreadState {
    if (!this.#actor || !this.#loaded) {
      throw new InvariantError("NOT_LOADED", `thread '${this.thread}' has no actor yet`);
    }
    return this.#actor.getSnapshot().context.core;
  }

  /** Sends one event; starts the summaries it asked for. */
  #send(event: Parameters<Actor<ThreadMachine>["send"]>[0]): void {
    (this.#actor as Actor<ThreadMachine>).send(event);
    this.#dirty = true;
    const requested = this.#requested;
    this.#requested = [];
    if (requested.length === 0) return;
    const core = this.#state();
    this.#jobs ??= this.#newJobs();
    for (const job of requested) this.#jobs.start(this.#withUntil(core, job));
  }

  #withUntil(core: ThreadState, job: SummaryJob): RequestedJob {
    if (job.kind === "leaf") return { job, until: job.message.at };
    const right = findBuilt(core, { level: job.level - 1, index: job.index * 2 + 1 });
    if (!right) {
      throw new InvariantError(
        "CHILD_MISSING",
        `merge ${job.name} of '${this.thread}' was asked for without its right child`,
      );
    }
    return { job, until: right.until };
  }

  async #burst(items: Item[]): Promise<void> {
    const statsBefore = this.#state().stats;
    // Acknowledged by the save that stores their effect (or at once if they have none); listed
    // first so a slot that stops in the middle of the burst knows what it gives up.
    for (const item of items) if (item.kind === "chat") this.#acks.hold(item.msg);
    const steps = await intake(this.#tools, items, this.#cursor, this.#state().deleted);
    const claiming = this.#ids.claim(steps, this.#state(), this.#cursor.seen);
    const claims = claiming instanceof Map ? claiming : await claiming;
    let chatSeen = false;
    for (const step of steps) {
      if (step.kind === "built") {
        const { level, index } = step.ref;
        this.#send({ type: "summary.built", level, index, text: step.text });
      } else if (step.kind === "failed") {
        const { level, index } = step.ref;
        this.#send({ type: "summary.failed", level, index, reason: step.reason });
      } else {
        chatSeen = true;
        const writing = this.#applyChat(step, claims);
        if (writing) await writing;
      }
    }
    const erased = this.#erasedAt !== undefined;
    if (erased) await this.#erase();
    else if (chatSeen && this.#state().deleted) await purgeChat(this.#tools, this.#cursor.seen);
    if (this.#state().outbox.length > 0) await this.#publishOutbox();
    // Checked here first: while the tail holds the whole thread (most bursts) there is nothing to
    // claim, and no promise or await per burst.
    if (this.#ids.due(this.#state())) await this.#ids.flush(this.#state());
    this.#checkAlive();
    // Chat events are acknowledged only once the state that includes them is stored (AckLedger).
    // A burst of summaries alone has nothing to acknowledge and is saved a little later,
    // coalesced: after a crash the older state asks for those nodes again and HISTORY answers
    // them, no model call. A burst that changed nothing (only redeliveries) is acknowledged now.
    if (chatSeen && this.#dirty) this.#acks.applied();
    if (this.#changed && !this.#state().deleted) this.#snapshots.wanted = true;
    this.#changed = false;
    this.#countStats(statsBefore, this.#state().stats);
    if (!this.#dirty) this.#acks.ackStored();
    else if (erased || this.#state().deleted || this.#acks.lingerOver()) await this.#save();
    else this.#acks.scheduleSave();
    this.#checkAlive();
    // A snapshot never shows a chat event before the state that holds it is stored (a crash
    // cannot make the outline go back on the log); with nothing unsaved it may be written now.
    // Summaries alone while a backlog is delivered wait a linger: the thread's next chat save
    // writes the snapshot with them (off the event loop they come back between messages, and a
    // write per such burst was 4.5× the writes per message). Caught up, they go out at once.
    if (this.#snapshots.wanted && !this.#acks.unsaved) {
      const { saveLingerMs, snapshotDelayMs, deliveries } = this.#ctx;
      this.#snapshots.request(
        !chatSeen && deliveries.behind ? Math.max(saveLingerMs, snapshotDelayMs) : undefined,
      );
    }
  }

  // Synchronous unless it has a write or a read to wait for (most events): no promise per event.
  #applyChat(entry: ChatEntry, claims: Map<number, IdClaim>): Promise<void> | undefined {
    const metrics = this.#ctx.metrics;
    if (entry.seq <= this.#cursor.seen) {
      metrics.add(METRIC.duplicates, 1, { why: "seq" });
      return undefined;
    }
    this.#cursor.seen = entry.seq;
    this.#dirty = true;
    const event = entry.event;
    const core = this.#state();
    if (event.kind === "invalid") return this.#rejections.deadLetter(entry, event.reason);
    if (core.deleted) {
      if (event.kind === "deleted") {
        metrics.add(METRIC.duplicates, 1, { why: "deleted" });
        return undefined;
      }
      return this.#rejections.deadLetter(
        entry,
        `thread deleted: thread '${this.thread}' was deleted (thread.deleted up to CHAT sequence ${core.seq}); a deleted thread takes no new messages, use a new thread id`,
      );
    }
    if (event.kind === "deleted") {
      this.#send({ type: "thread.deleted", at: event.at, seq: entry.seq });
      metrics.add(METRIC.events, 1, { kind: "deleted" });
      return undefined;
    }
    const claim = claims.get(entry.seq);
    const apply = () => {
      this.#send({
        type: "message.created",
        message: event.message,
        seq: entry.seq,
        ...(claim?.type === "duplicate" ? { firstSeq: claim.firstSeq } : {}),
      });
      const skips = this.#skips;
      this.#skips = [];
      if (skips.length === 0) {
        metrics.add(METRIC.events, 1, MESSAGE_EVENT);
        return undefined;
      }
      return this.#rejections.skipped(entry, skips);
    };
    // The settings a thread runs under are its log's: recorded on HISTORY before the first
    // message applied under them (a new thread's first, or the first after HISTORY_* changed).
    const settings = threadSettingsOf(this.#ctx.settings);
    if (core.count > 0 && sameThreadSettings(core.settings, settings)) return apply();
    return this.#ctx.history
      .recordSettings({ thread: this.thread, from: entry.seq, ...settings })
      .then(() => {
        if (!sameThreadSettings(this.#state().settings, settings)) {
          this.#send({ type: "settings.changed", settings });
        }
        return apply();
      });
  }

  #countStats(before: ThreadState["stats"], after: ThreadState["stats"]): void {
    // The core copies its stats only when it counts something: most bursts count nothing.
    if (after === before) return;
    const metrics = this.#ctx.metrics;
    // A thread.deleted resets the stats: nothing to count then.
    if (after.cuts < before.cuts) return;
    metrics.add(METRIC.cuts, after.cuts - before.cuts);
    metrics.add(METRIC.batches, after.batches - before.batches);
    metrics.add(METRIC.merges, after.merges - before.merges);
  }

  // -------------------------------------------------------------------------------------------
  // Durable effects

  /** Publishes the free nodes waiting in the outbox to HISTORY, then tells the actor. */
  async #publishOutbox(): Promise<void> {
    const outbox = this.#state().outbox;
    if (outbox.length === 0) return;
    await publishOutbox(this.#tools, outbox);
    this.#send({ type: "outbox.published", count: outbox.length });
  }

  /** Writes the actor state, fenced on its revision; retried in place until it is stored. */
  async #save(): Promise<void> {
    const { buckets } = this.#ctx;
    if (this.#ids.due(this.#state())) await this.#ids.flush(this.#state());
    // The events applied so far are in the state written below: acknowledged once it is stored.
    const { acks, hadChat } = this.#acks.takeForSave();
    const record = toPersisted(
      this.thread,
      this.#cursor.seen,
      this.#erasing,
      persistedSnapshotOf(this.#actor as Actor<ThreadMachine>, this.#persistedShell),
    );
    try {
      this.#actorRevision = await this.#tools.retry(
        "save actor state",
        () =>
          saveRecord(
            this.#ctx.kv.actors,
            buckets.names.actors,
            record,
            this.#actorRevision,
            this.#ctx.maxPayload(),
          ),
        (err) => err instanceof ActorStateError,
      );
      this.#checkAlive();
    } catch (err) {
      this.#acks.putBack(acks);
      throw err;
    }
    this.#dirty = false;
    this.#ctx.metrics.add(METRIC.stateSaves);
    this.#acks.ack(acks);
    if (BusyIndex.isBusy(this.#state()) !== this.#busyListed) await this.#syncBusy();
    // The outline of what was just stored: written now unless one was written very recently.
    if (hadChat) await this.#snapshots.afterSave(() => this.#state());
  }

  /** Lists the thread in the busy index while its stored state has work outstanding. */
  async #syncBusy(): Promise<void> {
    const busy = BusyIndex.isBusy(this.#state());
    if (busy === this.#busyListed) return;
    const index = this.#ctx.busy;
    await this.#tools.retry(busy ? "list the thread as busy" : "unlist the thread as busy", () =>
      busy ? index.mark(this.thread) : index.unmark(this.thread),
    );
    this.#busyListed = busy;
  }

  /**
   * thread.deleted: the tombstone (deleted, `erasing`) is saved first so a crash finishes the
   * job on restart; summaries in flight are stopped so none lands after the purge; then the
   * eraser purges the thread's streams (eraser.ts) and the chart moves on to `deleted`.
   */
  async #erase(): Promise<void> {
    this.#erasing = true;
    await this.#jobs?.stop();
    this.#jobs = undefined;
    // Its nodes are gone with it: a new thread of the same id starts with nothing refused.
    this.#ctx.refusals.forget(this.thread);
    this.#snapshots.forget();
    await this.#save();
    await eraseThread(this.#tools, this.#cursor.seen);
    this.#snapshots.revision = 0;
    this.#erasing = false;
    this.#erasedAt = undefined;
    this.#send({ type: "erase.done" });
  }

  async #writeSnapshot(): Promise<void> {
    // Chat events not stored yet: the save that stores them writes the snapshot.
    if (this.#acks.unsaved) return;
    await this.#snapshots.write(this.#state());
  }
}
