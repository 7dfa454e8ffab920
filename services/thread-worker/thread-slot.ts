import type { JsMsg } from "@nats-io/jetstream";
import { createActor, type Actor } from "xstate";
import { InvariantError } from "../../shared/errors.ts";
import type { Message } from "../../shared/events.ts";
import { claimId, type IdClaim } from "../../shared/message-ids.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import type { NodeRef } from "../../shared/names.ts";
import { toSnapshot } from "../../shared/snapshot.ts";
import { findBuilt, type ThreadState } from "../../shared/thread.ts";
import { stateName } from "../../machines/state-name.ts";
import { threadMachine, type ThreadMachine } from "../../machines/thread.ts";
import type { Effect } from "../../shared/step.ts";
import { publishDeadLetter } from "../nats/dead-letter.ts";
import { eraseSubject } from "../nats/erase.ts";
import type { ChatEventKind } from "../nats/subjects.ts";
import {
  ActorStateError,
  parsePersisted,
  restoreRecord,
  saveRecord,
  toPersisted,
  type PersistedActor,
} from "./actor-store.ts";
import { kvStream, kvSubject } from "./buckets.ts";
import { BusyIndex } from "./busy-index.ts";
import { ChatReadError, nextThreadEvent, readChatEvent } from "./chat-reader.ts";
import { decodeChatBody, type DecodedEvent } from "./decode.ts";
import { provablyContiguous, type DeliveryEpoch } from "./delivery-ledger.ts";
import { claimMessageId } from "./id-index.ts";
import { errorText } from "./log.ts";
import { METRIC } from "./metrics.ts";
import { retryInPlace, StoppedError } from "./retry.ts";
import { writeSnapshot } from "./snapshot-writer.ts";
import { SummaryJobs, type RequestedJob } from "./summary-jobs.ts";
import type { WorkerContext } from "./worker-context.ts";

/** What a thread's queue holds: chat events in delivery order, and summaries coming back. */
type Item =
  /** `type`: the event type its subject names (the subject was parsed once, to route it). */
  | { kind: "chat"; msg: JsMsg; epoch: DeliveryEpoch; type: ChatEventKind }
  | { kind: "built"; ref: NodeRef; text: string }
  | { kind: "failed"; ref: NodeRef; reason: string };

/** A chat event to handle: delivered (with the message to ack) or read from CHAT to fill a gap. */
interface ChatEntry {
  kind: "entry";
  seq: number;
  subject: string;
  data: Uint8Array;
  event: DecodedEvent;
  msg?: JsMsg;
}

/** The label of an applied message, made once rather than per message. */
const MESSAGE_EVENT = { kind: "message" } as const;

/** What a burst applies: chat entries (delivered or read for a gap) and summaries' results. */
type BurstItem = ChatEntry | Exclude<Item, { kind: "chat" }>;

type Skipped = Extract<Effect, { type: "skipped" }>;

/** No message has left the tail and the thread was weighed from its first: the tail is all of it. */
function isTailComplete(core: ThreadState): boolean {
  return core.complete && core.boundary === 0 && !core.deleted;
}

/**
 * The actor's `getPersistedSnapshot()`, without XState walking the whole context for actor
 * references to serialise: the context is the core, plain data that holds none (the machine
 * spawns no actor), so it is set back as is. Saved many times a second, that walk went over every
 * tail message's fields. XState's part (status, value, history, children…) is derived from the
 * snapshot fields in `ShellKey` alone and kept while they are the same objects: most saves
 * reuse it instead of copying the snapshot's fields again.
 */
export function persistedSnapshotOf(
  actor: Actor<ThreadMachine>,
  cache: { key?: ShellKey; shell?: PersistedActor },
): PersistedActor {
  const snapshot = actor.getSnapshot();
  const key = cache.key;
  if (
    !key ||
    key.status !== snapshot.status ||
    key.value !== stateName(snapshot.value) ||
    key.historyValue !== snapshot.historyValue ||
    key.children !== snapshot.children ||
    key.output !== snapshot.output ||
    key.error !== snapshot.error
  ) {
    cache.shell = actor.logic.getPersistedSnapshot({
      ...snapshot,
      context: NO_CONTEXT,
    } as unknown as typeof snapshot) as unknown as PersistedActor;
    const { status, historyValue, children, output, error } = snapshot;
    // By name: XState makes a new object for a nested state value at every transition.
    const value = stateName(snapshot.value);
    cache.key = { status, value, historyValue, children, output, error };
  }
  // A copy in the shell's key order, the context in its place.
  return { ...(cache.shell as PersistedActor), context: snapshot.context };
}
const NO_CONTEXT = {};

/** The snapshot fields XState's persisted form is made of, besides the context. */
export interface ShellKey {
  status: unknown;
  value: unknown;
  historyValue: unknown;
  children: unknown;
  output: unknown;
  error: unknown;
}

export type SlotEnd = "passivated" | "drained" | "lost" | "failed" | "abandoned";

/**
 * One thread's actor and everything that touches it. Events are applied strictly one after the
 * other, in delivery order, by a single loop; a burst of queued events is applied, its effects
 * made durable (free nodes on HISTORY, actor state in KV) and only then acknowledged, with one
 * state write per burst. Summaries run beside the loop and come back through the same queue.
 */
export class ThreadSlot {
  readonly thread: string;
  readonly #ctx: WorkerContext;
  readonly #onEnd: (slot: ThreadSlot, end: SlotEnd) => void;
  /** Aborted when the slot is abandoned: every retry loop and wait stops at once. */
  readonly #abort = new AbortController();
  #actor: Actor<ThreadMachine> | undefined;
  /** The stored state is in the actor (it left `loading`). */
  #loaded = false;
  /** Made on the first summary asked for: most threads of a busy platform never ask for one. */
  #jobs: SummaryJobs | undefined;
  /** Set when the slot passivates with refused nodes waiting: when to try the first again. */
  #retryAt: number | undefined;

  #queue: Item[] = [];
  #running: Promise<void> | undefined;
  #kickScheduled = false;
  #ended: SlotEnd | undefined;
  #lastActivity = Date.now();

  /**
   * While the tail holds all of the thread: its message ids (id → CHAT sequence), checked here
   * in O(1) instead of in the id index, and claimed there all at once when the first cut takes
   * messages out of the tail.
   */
  #unclaimed = new Map<string, number>();
  /** Highest CHAT sequence handled; persisted with the state. */
  #seen = 0;
  /**
   * The delivery epoch whose events this slot has all been given since it last read CHAT up to
   * one of them (or since it was created): events routed in it need no gap read.
   */
  #joined: DeliveryEpoch;
  #erasing = false;
  #actorRevision = 0;
  #snapshotRevision = 0;
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

  #snapshotWanted = false;
  #snapshotDue = false;
  #snapshotTimer: NodeJS.Timeout | undefined;
  #lastSnapshotAt = 0;
  #saveDue = false;
  #saveTimer: NodeJS.Timeout | undefined;
  #saveAt = 0;
  /** Chat events applied and not yet in the stored state: acknowledged by the save that stores them. */
  #unacked: JsMsg[] = [];
  /** When the oldest chat event not yet stored was applied; undefined when there is none. */
  #unsavedSince: number | undefined;
  #passivateWanted = false;
  #lastHeartbeat = 0;

  constructor(thread: string, ctx: WorkerContext, onEnd: (slot: ThreadSlot, end: SlotEnd) => void) {
    this.thread = thread;
    this.#ctx = ctx;
    this.#onEnd = onEnd;
    this.#joined = ctx.deliveries.current;
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
        if (!this.#ended && (work || this.#snapshotDue || this.#saveDue)) this.#kick();
      });
  }

  async #loop(): Promise<void> {
    if (!this.#loaded) await this.#load();
    while (!this.#ended) {
      const items = this.#queue.length > 0 ? this.#nextItems() : [];
      if (items.length > 0) {
        await this.#burst(items);
      } else if (this.#snapshotDue) {
        this.#snapshotDue = false;
        if (this.#snapshotWanted) await this.#writeSnapshot();
      } else if (this.#saveDue) {
        this.#saveDue = false;
        if (this.#dirty) await this.#save();
        else this.#ackStored();
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

  /** Too many whole messages wait for summaries: new chat events must wait in the stream. */
  #backlogged(): boolean {
    return this.#actor?.getSnapshot().value === "backlog";
  }

  /** The queue holds only chat events that the backlog keeps waiting. */
  #holdingOnly(): boolean {
    return this.#backlogged() && this.#queue.every((item) => item.kind === "chat");
  }

  /** The next burst: the queue's head, or while backlogged only the summaries' results. */
  #nextItems(): Item[] {
    if (!this.#backlogged()) {
      // The whole queue (the usual case) is taken as it is, not copied out.
      if (this.#queue.length > this.#ctx.maxBurst) return this.#queue.splice(0, this.#ctx.maxBurst);
      const items = this.#queue;
      this.#queue = [];
      return items;
    }
    const results = this.#queue.filter((item) => item.kind !== "chat");
    if (results.length > 0) this.#queue = this.#queue.filter((item) => item.kind === "chat");
    else this.#heartbeat();
    return results;
  }

  /** Held events tell the server they are in progress, so it does not redeliver them meanwhile. */
  #heartbeat(): void {
    const now = Date.now();
    if (now - this.#lastHeartbeat < 1_000) return;
    this.#lastHeartbeat = now;
    this.#ctx.metrics.add(METRIC.backlogHolds);
    for (const item of this.#queue) if (item.kind === "chat") item.msg.working();
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
      this.#ctx.deliveries.released(this.#unacked.length);
      this.#unacked = [];
      return;
    }
    this.#ended = end;
    // Events given up unacknowledged come back to a worker after the ack wait.
    const dropped = this.#unacked.length + this.#queue.filter((i) => i.kind === "chat").length;
    this.#unacked = [];
    this.#queue = [];
    this.#ctx.deliveries.released(dropped);
    clearTimeout(this.#snapshotTimer);
    clearTimeout(this.#saveTimer);
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
    if (this.#ended || this.#unsavedSince === undefined || this.#unsavedSince > appliedBy) return;
    clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
    this.#saveDue = true;
    this.#kick();
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
    clearTimeout(this.#snapshotTimer);
    this.#snapshotTimer = undefined;
    clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
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
    clearTimeout(this.#snapshotTimer);
    this.#snapshotTimer = undefined;
    clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
    if (this.#dirty) await this.#save();
    else this.#ackStored();
    if (this.#snapshotWanted) await this.#writeSnapshot();
  }

  // -------------------------------------------------------------------------------------------
  // Loading

  #retry<T>(what: string, fn: () => Promise<T>, isPermanent?: (err: unknown) => boolean) {
    return retryInPlace(fn, {
      what: `${what} (thread '${this.thread}')`,
      log: this.#ctx.log,
      signal: this.#abort.signal,
      ...(isPermanent ? { isPermanent } : {}),
    });
  }

  /** Creates the actor (`loading`) and gives it the persisted state when there is one. */
  async #load(): Promise<void> {
    const { buckets, jsm, names } = this.#ctx;
    this.#actor ??= this.#createActor();
    const entry = await this.#retry("read actor state", () => buckets.actors.get(this.thread));
    let snapshot: PersistedActor | undefined;
    if (entry?.operation === "PUT") {
      const record = parsePersisted(this.thread, entry.value, buckets.names.actors);
      snapshot = await this.#retry(
        "read the tail and the built nodes back from CHAT and HISTORY",
        () => restoreRecord(jsm, names, this.#ctx.history, record, buckets.names.actors),
        (err) => err instanceof ChatReadError || err instanceof ActorStateError,
      );
      this.#seen = record.seen;
      this.#erasing = record.erasing;
      this.#ctx.metrics.add(METRIC.rehydrations);
    }
    this.#actorRevision = entry?.revision ?? 0;
    // A thread never stored has no snapshot of ours either: its first write creates the key (a
    // snapshot someone else wrote is met by the writer's fence, snapshot-writer.ts).
    const shown = entry
      ? await this.#retry("read snapshot", () => buckets.snapshots.get(this.thread))
      : null;
    this.#snapshotRevision = shown?.revision ?? 0;
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
    const core = this.#state();
    if (isTailComplete(core)) {
      // Saved while the tail held the whole thread: its ids may not be in the index yet.
      for (const entry of core.tail) this.#unclaimed.set(entry.message.id, entry.seq);
    }
    this.#send({ type: "jobs.resume" });
    await this.#publishOutbox();
    await this.#claimUnclaimed();
    if (this.#dirty) await this.#save();
    else await this.#syncBusy();
    this.#snapshotWanted = true;
    this.#snapshotDue = true;
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
    const steps: BurstItem[] = [];
    const deleted = this.#state().deleted;
    let cursor = this.#seen;
    // Acknowledged by the save that stores their effect (or at once if they have none); listed
    // first so a slot that stops in the middle of the burst knows what it gives up.
    for (const item of items) if (item.kind === "chat") this.#unacked.push(item.msg);
    for (const item of items) {
      if (item.kind !== "chat") {
        steps.push(item);
        continue;
      }
      // Any delivered event may follow a gap, not only the burst's first: a redelivery followed
      // by a newer event, or events of this thread delivered to another worker. The gap is read
      // from CHAT and applied first, so the thread's events apply in stream order and none is
      // skipped by the sequence check below. It is not read when the ledger proves this slot was
      // given every event of the thread since `cursor` (they are in this burst or applied).
      const contiguous =
        this.#ctx.skipGapReads && provablyContiguous(item.msg, item.epoch, this.#joined, cursor);
      if (!deleted && item.msg.seq > cursor + 1) {
        if (contiguous) this.#ctx.metrics.add(METRIC.gapReadsSkipped);
        else steps.push(...(await this.#readGap(cursor + 1, item.msg.seq)));
      }
      // Caught up to a first delivery of its epoch: every later event of the thread routed in it
      // comes to this slot, in stream order.
      if (item.epoch.start !== undefined && item.msg.info.deliveryCount === 1) {
        this.#joined = item.epoch;
      }
      cursor = Math.max(cursor, item.msg.seq);
      const { subject, data } = item.msg;
      steps.push({
        kind: "entry",
        seq: item.msg.seq,
        subject,
        data,
        event: decodeChatBody(this.thread, item.type, subject, data),
        msg: item.msg,
      });
    }
    const claiming = this.#claimIds(steps);
    const claims = claiming instanceof Map ? claiming : await claiming;
    let chatSeen = false;
    for (const step of steps) {
      if (step.kind === "built") {
        this.#send({
          type: "summary.built",
          level: step.ref.level,
          index: step.ref.index,
          text: step.text,
        });
      } else if (step.kind === "failed") {
        this.#send({
          type: "summary.failed",
          level: step.ref.level,
          index: step.ref.index,
          reason: step.reason,
        });
      } else {
        chatSeen = true;
        const writing = this.#applyChat(step, claims);
        if (writing) await writing;
      }
    }
    const erased = this.#erasedAt !== undefined;
    if (erased) await this.#erase();
    else if (chatSeen && this.#state().deleted) await this.#purgeChat();
    if (this.#state().outbox.length > 0) await this.#publishOutbox();
    // Checked here first: while the tail holds the whole thread (most bursts) there is nothing to
    // claim, and no promise or await per burst.
    if (this.#unclaimedDue()) await this.#claimUnclaimed();
    this.#checkAlive();
    // Chat events are acknowledged only once the state that includes them is stored. A burst of
    // summaries alone has nothing to acknowledge and is saved a little later, coalesced: after
    // a crash the older state asks for those nodes again and HISTORY answers them, no model call.
    // While the consumer has a backlog, chat events wait up to saveLingerMs (from the oldest) so
    // one save stores, and then acknowledges, all that arrived meanwhile; caught up, a burst is
    // saved at once. A burst that changed nothing (only redeliveries already handled) is
    // acknowledged at once.
    if (chatSeen && this.#dirty) this.#unsavedSince ??= Date.now();
    if (this.#changed && !this.#state().deleted) this.#snapshotWanted = true;
    this.#changed = false;
    this.#countStats(statsBefore, this.#state().stats);
    if (!this.#dirty) {
      this.#ackStored();
    } else if (erased || this.#state().deleted || this.#lingerOver()) {
      await this.#save();
    } else if (this.#unsavedSince !== undefined) {
      this.#scheduleSave(this.#unsavedSince + this.#lingerMs() - Date.now());
    } else {
      this.#scheduleSave(this.#ctx.saveDelayMs);
    }
    this.#checkAlive();
    // A snapshot never shows a chat event before the state that holds it is stored (a crash
    // cannot make the outline go back on the log); with nothing unsaved it may be written now.
    if (this.#snapshotWanted && this.#unsavedSince === undefined) this.#requestSnapshot();
  }

  /** Unsaved chat events to save now: no backlog, waited long enough, or many waiting. */
  #lingerOver(): boolean {
    if (this.#unsavedSince === undefined) return false;
    return (
      !this.#ctx.deliveries.behind ||
      Date.now() - this.#unsavedSince >= this.#lingerMs() ||
      this.#unacked.length >= this.#ctx.maxBurst
    );
  }

  /**
   * How long chat events wait for more to share their save: half as long while the worker holds
   * so many unacknowledged that the consumer is about to stop delivering (the oldest go first,
   * fresh ones still gather more). Waiting out the whole linger then would leave the worker idle
   * with work in the stream.
   */
  #lingerMs(): number {
    return this.#ctx.saveLingerMs * this.#ctx.deliveries.lingerShare;
  }

  /** Nothing applied is unsaved: every event handled so far can be acknowledged. */
  #ackStored(): void {
    const acks = this.#unacked;
    this.#unacked = [];
    this.#unsavedSince = undefined;
    this.#ack(acks);
  }

  #ack(msgs: JsMsg[]): void {
    for (const msg of msgs) msg.ack();
    this.#ctx.deliveries.released(msgs.length);
  }

  /**
   * Events of this thread stored in [`fromSeq`, `seq`) and not handled yet: after a crash their
   * redelivery waits for the ack wait while newer events arrive at once, and with two workers
   * each receives only some of a thread's events. They are read from CHAT
   * (the log) and applied first; their redeliveries are then skipped by sequence.
   */
  async #readGap(fromSeq: number, seq: number): Promise<ChatEntry[]> {
    const gap: ChatEntry[] = [];
    let from = fromSeq;
    while (from < seq) {
      this.#ctx.metrics.add(METRIC.gapReads);
      const next = await this.#retry("read CHAT ahead of a redelivery", () =>
        nextThreadEvent(this.#ctx.jsm, this.#ctx.names, this.thread, from),
      );
      if (!next || next.seq >= seq) break;
      gap.push({
        kind: "entry",
        seq: next.seq,
        subject: next.subject,
        data: next.data,
        event: next.event,
      });
      from = next.seq + 1;
    }
    this.#ctx.metrics.add(METRIC.gapFills, gap.length);
    return gap;
  }

  /** Claims the message ids of the burst's new messages in the id index, in parallel. */
  #claimIds(steps: BurstItem[]): Map<number, IdClaim> | Promise<Map<number, IdClaim>> {
    const claims = new Map<number, IdClaim>();
    const core = this.#state();
    if (core.deleted) return claims;
    // While no message has left the tail, the tail is every message the thread has: an id is
    // checked there and recorded in the index only when the first cut takes messages out.
    const tailComplete = isTailComplete(core);
    // Ids of the burst, for the index's claims (the tail's check records them as it goes).
    const firstSeqOf = tailComplete ? undefined : new Map<string, number>();
    const pending: Promise<void>[] = [];
    let seen = this.#seen;
    for (const step of steps) {
      if (step.kind !== "entry" || step.seq <= seen) continue;
      seen = step.seq;
      if (step.event.kind !== "message") continue;
      const { id } = step.event.message;
      const seq = step.seq;
      if (!firstSeqOf) {
        // The same id twice in one burst too: the first one, recorded here, is the message.
        claims.set(seq, claimId(this.#unclaimed, id, seq));
        continue;
      }
      const first = firstSeqOf.get(id);
      if (first !== undefined) {
        // The same id twice in one burst: the first one is the message.
        claims.set(seq, { type: "duplicate", firstSeq: first });
        continue;
      }
      firstSeqOf.set(id, seq);
      pending.push(
        this.#retry("record the message id", () =>
          claimMessageId(this.#ctx.kv.ids, this.thread, id, seq),
        ).then((claim) => {
          claims.set(seq, claim);
        }),
      );
    }
    if (pending.length === 0) return claims;
    return Promise.all(pending).then(() => claims);
  }

  /** Ids applied without a claim must go to the index now (see #claimUnclaimed). */
  #unclaimedDue(): boolean {
    if (this.#unclaimed.size === 0) return false;
    const core = this.#state();
    return core.deleted || !isTailComplete(core);
  }

  /**
   * Once messages have left the tail (or the thread is no longer complete), every id applied
   * without a claim is recorded in the index, before any later message is checked against it
   * and before a state without them in the tail is saved.
   */
  async #claimUnclaimed(): Promise<void> {
    if (this.#unclaimed.size === 0) return;
    const core = this.#state();
    if (core.deleted) {
      this.#unclaimed.clear();
      return;
    }
    if (isTailComplete(core)) return;
    const unclaimed = [...this.#unclaimed];
    await Promise.all(
      unclaimed.map(([id, seq]) =>
        this.#retry("record the message id", () =>
          claimMessageId(this.#ctx.kv.ids, this.thread, id, seq),
        ).then((claim) => {
          // Applied already (the tail was checked); the index names an earlier copy, which
          // keeps any later copy out just as well.
          if (claim.type === "duplicate" && claim.firstSeq !== seq) {
            this.#ctx.log.warn(
              `message id '${id}' of thread '${this.thread}' applied at CHAT sequence ${seq} is indexed at ${claim.firstSeq}`,
            );
          }
        }),
      ),
    );
    for (const [id] of unclaimed) this.#unclaimed.delete(id);
  }

  // Synchronous unless it has a write or a read to wait for (most events): no promise per event.
  #applyChat(entry: ChatEntry, claims: Map<number, IdClaim>): Promise<void> | undefined {
    const metrics = this.#ctx.metrics;
    if (entry.seq <= this.#seen) {
      metrics.add(METRIC.duplicates, 1, { why: "seq" });
      return undefined;
    }
    this.#seen = entry.seq;
    this.#dirty = true;
    const event = entry.event;
    const core = this.#state();
    if (event.kind === "invalid") return this.#deadLetter(entry, event.reason);
    if (core.deleted) {
      if (event.kind === "deleted") {
        metrics.add(METRIC.duplicates, 1, { why: "deleted" });
        return undefined;
      }
      return this.#deadLetter(
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
    return this.#recordSkips(entry, skips);
  }

  async #duplicateId(entry: ChatEntry, message: Message, firstSeq: number): Promise<void> {
    const conflict = await this.#conflictingDuplicate(message, firstSeq);
    if (conflict) await this.#deadLetter(entry, conflict);
    else this.#ctx.metrics.add(METRIC.duplicates, 1, { why: "id" });
  }

  async #recordSkips(entry: ChatEntry, skips: Skipped[]): Promise<void> {
    for (const { outcome } of skips) {
      if (outcome.type !== "duplicate") await this.#deadLetter(entry, outcome.reason);
      else if (outcome.firstSeq === undefined)
        this.#ctx.metrics.add(METRIC.duplicates, 1, { why: "tail" });
      else if (entry.event.kind === "message")
        await this.#duplicateId(entry, entry.event.message, outcome.firstSeq);
    }
  }

  /**
   * A re-published id is applied once; when its content differs from the first copy, the second
   * one is an edit the contract has no event for, so it is recorded (not silently dropped).
   */
  async #conflictingDuplicate(message: Message, firstSeq: number): Promise<string | undefined> {
    const first = await this.#retry("read the first copy of a re-published message id", () =>
      readChatEvent(this.#ctx.jsm, this.#ctx.names, firstSeq),
    );
    if (first?.event.kind !== "message") return undefined;
    if (JSON.stringify(first.event.message) === JSON.stringify(message)) return undefined;
    return `message id '${message.id}' was applied at CHAT sequence ${firstSeq} with different content; a message id is applied once, so this copy is ignored: publish a changed message under a new id`;
  }

  async #deadLetter(entry: ChatEntry, reason: string): Promise<void> {
    const { js, names, metrics, log } = this.#ctx;
    await this.#retry("publish a dead letter", () =>
      publishDeadLetter(js, names, {
        reason,
        subject: entry.subject,
        data: entry.data,
        seq: entry.seq,
        maxPayload: this.#ctx.maxPayload(),
      }),
    );
    metrics.add(METRIC.deadLetters);
    log.warn(`dead letter: ${entry.subject} #${entry.seq}: ${reason}`);
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
    const { history, metrics } = this.#ctx;
    await Promise.all(
      outbox.map((node) =>
        this.#retry(`publish free node ${node.level}:${node.index} to HISTORY`, () =>
          history.publish({
            thread: this.thread,
            level: node.level,
            index: node.index,
            text: node.text,
            until: node.until,
            by: "free",
            ...(node.message ? { message: node.message } : {}),
          }),
        ),
      ),
    );
    for (const node of outbox) {
      metrics.add(METRIC.summaries, 1, {
        kind: node.level === 0 ? "leaf" : "merge",
        source: "free",
      });
    }
    this.#send({ type: "outbox.published", count: outbox.length });
  }

  /** Writes the actor state, fenced on its revision; retried in place until it is stored. */
  async #save(): Promise<void> {
    const { buckets } = this.#ctx;
    if (this.#unclaimedDue()) await this.#claimUnclaimed();
    // The events applied so far are in the state written below: acknowledged once it is stored.
    const acks = this.#unacked;
    const hadChat = this.#unsavedSince !== undefined;
    this.#unacked = [];
    this.#unsavedSince = undefined;
    const record = toPersisted(
      this.thread,
      this.#seen,
      this.#erasing,
      persistedSnapshotOf(this.#actor as Actor<ThreadMachine>, this.#persistedShell),
    );
    try {
      this.#actorRevision = await this.#retry(
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
      // Not acknowledged: still this slot's to give up when it ends.
      this.#unacked = acks.concat(this.#unacked);
      throw err;
    }
    this.#dirty = false;
    this.#ctx.metrics.add(METRIC.stateSaves);
    this.#ack(acks);
    if (BusyIndex.isBusy(this.#state()) !== this.#busyListed) await this.#syncBusy();
    // The outline of what was just stored: written now unless one was written very recently.
    if (hadChat && this.#snapshotWanted) {
      if (Date.now() - this.#lastSnapshotAt >= this.#ctx.snapshotDelayMs)
        await this.#writeSnapshot();
      else this.#requestSnapshot();
    }
  }

  /** Lists the thread in the busy index while its stored state has work outstanding. */
  async #syncBusy(): Promise<void> {
    const busy = BusyIndex.isBusy(this.#state());
    if (busy === this.#busyListed) return;
    const index = this.#ctx.busy;
    await this.#retry(busy ? "list the thread as busy" : "unlist the thread as busy", () =>
      busy ? index.mark(this.thread) : index.unmark(this.thread),
    );
    this.#busyListed = busy;
  }

  /**
   * thread.deleted: the tombstone (deleted, `erasing`) is saved first so a crash finishes the
   * job on restart; summaries in flight are stopped so none lands after the purge; then
   * CHAT up to the delete, HISTORY, the id index and the snapshot are erased, in that order.
   */
  async #erase(): Promise<void> {
    const { jsm, names, subjects, buckets } = this.#ctx;
    this.#erasing = true;
    await this.#jobs?.stop();
    this.#jobs = undefined;
    // Its nodes are gone with it: a new thread of the same id starts with nothing refused.
    this.#ctx.refusals.forget(this.thread);
    clearTimeout(this.#snapshotTimer);
    this.#snapshotTimer = undefined;
    this.#snapshotWanted = false;
    await this.#save();
    // CHAT first and the snapshot last: the API answers 404 once a thread has neither, so while
    // the erase runs (one delete per message on servers before 2.10) it can fail a request for
    // the thread, but never serve its messages as a thread without a snapshot.
    await this.#purgeChat();
    const purge = this.#ctx.purgeBySubject;
    await this.#retry("erase the thread's summaries", () =>
      eraseSubject(jsm, names.historyStream, subjects.threadHistory(this.thread), { purge }),
    );
    await this.#retry("erase the message id index", () =>
      eraseSubject(
        jsm,
        kvStream(buckets.names.ids),
        kvSubject(buckets.names.ids, `${this.thread}.>`),
        { purge },
      ),
    );
    await this.#retry("erase the snapshot", () =>
      eraseSubject(jsm, kvStream(names.kvBucket), kvSubject(names.kvBucket, this.thread), {
        purge,
      }),
    );
    this.#snapshotRevision = 0;
    this.#erasing = false;
    this.#erasedAt = undefined;
    this.#send({ type: "erase.done" });
  }

  /** Purges the thread's CHAT events handled so far (dead-lettered ones keep their bytes in DEAD). */
  async #purgeChat(): Promise<void> {
    const { jsm, names, subjects } = this.#ctx;
    await this.#retry("erase the thread's chat events", () =>
      eraseSubject(jsm, names.chatStream, subjects.threadChat(this.thread), {
        below: this.#seen + 1,
        purge: this.#ctx.purgeBySubject,
      }),
    );
    // Only a purge can move the consumer (see services/nats/erase.ts); deletes leave it where it
    // was. Either way no slot counts on having been given every event until each reads CHAT once.
    this.#ctx.deliveries.interrupt();
  }

  // -------------------------------------------------------------------------------------------
  // Snapshots

  /** A save in `ms` at the latest (an earlier one already scheduled stands). */
  #scheduleSave(ms: number): void {
    const at = Date.now() + Math.max(0, ms);
    if (this.#saveTimer && this.#saveAt <= at) return;
    clearTimeout(this.#saveTimer);
    this.#saveAt = at;
    this.#saveTimer = setTimeout(
      () => {
        this.#saveTimer = undefined;
        this.#saveDue = true;
        this.#kick();
      },
      Math.max(0, ms),
    );
  }

  /** At most one snapshot write per `snapshotDelayMs`, whatever the event rate. */
  #requestSnapshot(): void {
    this.#snapshotWanted = true;
    if (this.#snapshotTimer) return;
    this.#snapshotTimer = setTimeout(() => {
      this.#snapshotTimer = undefined;
      this.#snapshotDue = true;
      this.#kick();
    }, this.#ctx.snapshotDelayMs);
  }

  async #writeSnapshot(): Promise<void> {
    // Chat events not stored yet: the save that stores them writes the snapshot.
    if (this.#unsavedSince !== undefined) return;
    this.#snapshotWanted = false;
    const core = this.#state();
    if (core.deleted) return;
    this.#lastSnapshotAt = Date.now();
    this.#snapshotRevision = await writeSnapshot(
      this.#ctx,
      this.thread,
      toSnapshot(core),
      this.#snapshotRevision,
      this.#abort.signal,
    );
  }
}
