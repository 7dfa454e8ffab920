import { createActor, type Actor } from "xstate";
import { InvariantError } from "../../shared/errors.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import type { Effect } from "../../shared/step.ts";
import { findBuilt, type ThreadState } from "../../shared/thread.ts";
import {
  newThreadSnapshot,
  threadMachine,
  type HostEvent,
  type SlotEnd,
  type ThreadMachine,
} from "../../machines/thread.ts";
import type { Item } from "./slot-queue.ts";
import { SummaryJobs, type RequestedJob } from "./summary-jobs.ts";
import type { WorkerContext } from "./worker-context.ts";

export type Skipped = Extract<Effect, { type: "skipped" }>;

/** An event the slot sends its actor. */
export type ActorEvent = Parameters<Actor<ThreadMachine>["send"]>[0];

/** A step of the slot's lifecycle the chart takes (its `slot` region). */
export type SlotEvent = Exclude<HostEvent, { type: "loaded" } | { type: "erase.done" }>;

/** The states of the chart's `slot` region, without their substates. */
export type SlotState = "open" | "saving" | "passivating" | "draining" | "ended";

type ThreadValue = ReturnType<Actor<ThreadMachine>["getSnapshot"]>["value"];

/**
 * A thread's actor as its slot hosts it: events go in, the effects each step leaves in the
 * machine's context are read right after `send` and run, the summaries it asks for beside the
 * slot's loop (they come back through its queue).
 */
export class HostedActor {
  readonly #ctx: WorkerContext;
  readonly #thread: string;
  readonly #enqueue: (item: Item) => void;
  #actor: Actor<ThreadMachine> | undefined;
  /** The stored state is in the actor (it left `loading`). */
  #loaded = false;
  /** Made on the first summary asked for: most threads of a busy platform never ask for one. */
  #jobs: SummaryJobs | undefined;

  /** The last step's effects run: an event the chart takes no step for leaves them in place. */
  #ran: readonly Effect[] | undefined;
  /** The `skipped` effects of the events sent since the burst last took them. */
  #skips: Skipped[] = [];
  /** The outline changed since the slot last looked (`snapshotChanged`). */
  changed = false;
  /** The state differs from the stored record. */
  dirty = false;

  /** `enqueue` puts a finished summary in the slot's queue. */
  constructor(ctx: WorkerContext, thread: string, enqueue: (item: Item) => void) {
    this.#ctx = ctx;
    this.#thread = thread;
    this.#enqueue = enqueue;
  }

  /** Makes the actor, in `loading`, unless it is made already. */
  create(): void {
    this.#actor ??= this.#createActor();
  }

  /**
   * A thread never stored: its actor starts loaded (there is nothing to read back). One made
   * already (a drain before the load) is told `loaded` with nothing, which leads to the same.
   */
  createNew(): void {
    if (this.#actor) {
      this.load(undefined, false);
      return;
    }
    const actor = (this.#actor = this.#createActor(true));
    this.#ran = actor.getSnapshot().context.effects;
    this.#loaded = true;
  }

  /** The XState actor, made on first use. */
  get actor(): Actor<ThreadMachine> {
    return (this.#actor ??= this.#createActor());
  }

  get loaded(): boolean {
    return this.#loaded;
  }

  /** The thread's state, for tests and tools; undefined before the actor is loaded. */
  get core(): ThreadState | undefined {
    return this.#loaded ? this.#actor?.getSnapshot().context.core : undefined;
  }

  #createActor(fresh = false): Actor<ThreadMachine> {
    const input = {
      thread: this.#thread,
      settings: this.#ctx.settings,
      hosted: true,
      backlogLimit: this.#ctx.backlogLimit,
    };
    // Absent options as undefined, not spread in: a spread copy is V8's slow path.
    const actor = createActor(threadMachine, {
      input,
      snapshot: fresh ? newThreadSnapshot(input) : undefined,
      inspect: this.#ctx.inspect,
    });
    actor.start();
    this.#ctx.actorFeed.report(actor, actor.getSnapshot(), "xstate.init");
    return actor;
  }

  /** Gives the actor its stored core (none for a new thread): it leaves `loading`. */
  load(core: ThreadState | undefined, erasing: boolean): void {
    const actor = this.actor;
    actor.send(core ? { type: "loaded", core, erasing } : { type: "loaded" });
    const snapshot = actor.getSnapshot();
    this.#ctx.actorFeed.report(actor, snapshot, "loaded");
    this.#ran = snapshot.context.effects;
    this.#loaded = true;
  }

  state(): ThreadState {
    if (!this.#actor || !this.#loaded) {
      throw new InvariantError("NOT_LOADED", `thread '${this.#thread}' has no actor yet`);
    }
    return this.#actor.getSnapshot().context.core;
  }

  #value(): ThreadValue | undefined {
    return this.#actor?.getSnapshot().value;
  }

  /** The chart holds a backlog: new chat events must wait in the stream. */
  backlogged(): boolean {
    return this.#value()?.thread === "backlog";
  }

  /** The chart is in `erasing`: a thread.deleted applied, its purges not all done. */
  get erasing(): boolean {
    return this.#value()?.thread === "erasing";
  }

  /** The chart is past a thread.deleted (`erasing`, `deleted`): the step refuses messages. */
  get refusing(): boolean {
    const thread = this.#value()?.thread;
    return thread === "erasing" || thread === "deleted";
  }

  /** The chart's `slot` state; `open` before the actor is made. */
  get slot(): SlotState {
    const slot = this.#value()?.slot;
    if (slot === undefined) return "open";
    if (typeof slot === "string") return slot;
    return "ended" in slot ? "ended" : "passivating";
  }

  /** How the slot ended, from the chart; undefined while it has not. */
  get ended(): SlotEnd | undefined {
    const slot = this.#value()?.slot;
    return typeof slot === "object" && "ended" in slot ? slot.ended : undefined;
  }

  /** The passivation under way is to make room under the actor cap (`passivating.room`). */
  get forRoom(): boolean {
    const slot = this.#value()?.slot;
    return typeof slot === "object" && "passivating" in slot && slot.passivating === "room";
  }

  /**
   * Tells the chart a step of the slot's lifecycle; after the end, nothing (the actor is
   * stopped). The actor is made if there is none yet: a slot may drain or end before its load.
   */
  host(event: SlotEvent): void {
    if (this.ended) return;
    const actor = this.actor;
    actor.send(event);
    this.#ctx.actorFeed.report(actor, actor.getSnapshot(), event.type);
  }

  /** Sends one event and runs the effects of its step; starts the summaries it asked for. */
  send(event: ActorEvent): void {
    const actor = this.#actor as Actor<ThreadMachine>;
    actor.send(event);
    const snapshot = actor.getSnapshot();
    this.#ctx.actorFeed.report(actor, snapshot, event.type);
    this.dirty = true;
    const effects = snapshot.context.effects;
    if (effects === this.#ran) return;
    this.#ran = effects;
    let requested: SummaryJob[] | undefined;
    for (const effect of effects) {
      if (effect.type === "snapshotChanged") this.changed = true;
      else if (effect.type === "requestSummary") (requested ??= []).push(effect.job);
      else if (effect.type === "skipped") this.#skips.push(effect);
      // `erased`: the chart is in `erasing` now, which the slot reads (`erasing`).
    }
    if (!requested) return;
    const core = snapshot.context.core;
    this.#jobs ??= this.#newJobs();
    for (const job of requested) this.#jobs.start(this.#withUntil(core, job));
  }

  /** The `skipped` effects of the last event sent. */
  takeSkips(): Skipped[] {
    const skips = this.#skips;
    if (skips.length > 0) this.#skips = [];
    return skips;
  }

  /** Shown in the chart (`slot.ended`), then stopped: the actor leaves memory. */
  end(end: SlotEnd): void {
    this.host({ type: "end", end });
    const actor = this.actor;
    actor.stop();
    this.#ctx.actorFeed.report(actor, actor.getSnapshot(), "xstate.stop");
  }

  #withUntil(core: ThreadState, job: SummaryJob): RequestedJob {
    if (job.kind === "leaf") return { job, until: job.message.at };
    const right = findBuilt(core, { level: job.level - 1, index: job.index * 2 + 1 });
    if (!right) {
      throw new InvariantError(
        "CHILD_MISSING",
        `merge ${job.name} of '${this.#thread}' was asked for without its right child`,
      );
    }
    return { job, until: right.until };
  }

  // -------------------------------------------------------------------------------------------
  // Summary jobs

  #newJobs(): SummaryJobs {
    return new SummaryJobs({
      summarizer: this.#ctx.summarizer,
      limiter: this.#ctx.limiter,
      history: this.#ctx.history,
      metrics: this.#ctx.metrics,
      log: this.#ctx.log,
      retries: this.#ctx.retries,
      timing: this.#ctx.jobTiming,
      refusals: this.#ctx.refusals,
      group: this.#ctx.settings.group ?? 1,
      built: (ref, text) => this.#enqueue({ kind: "built", ref, text }),
      failed: (ref, reason) => this.#enqueue({ kind: "failed", ref, reason }),
    });
  }

  /**
   * Stops the jobs: made now if there are none yet, so a summary the rest of a burst asks for
   * after the stop goes to stopped jobs and is not started.
   */
  stopJobs(): Promise<void> {
    return (this.#jobs ??= this.#newJobs()).stop();
  }

  /** Stops the jobs and forgets them: summaries asked for later start afresh (an erase). */
  async dropJobs(): Promise<void> {
    await this.#jobs?.stop();
    this.#jobs = undefined;
  }

  /** Jobs started and not finished, those waiting out a refusal's backoff included. */
  jobsActive(): number {
    return this.#jobs?.active ?? 0;
  }

  /** Jobs doing something: not only waiting out a refusal's backoff (that keeps no thread). */
  jobsBusy(): number {
    return this.#jobs ? this.#jobs.active - this.#jobs.waitingOut : 0;
  }

  /**
   * Stops jobs that only wait out a refusal's backoff, so the thread can leave memory: their
   * nodes stay in flight in the saved state, are asked again when the thread is loaded (the
   * worker's Refusals keep what is left of the wait), and the registry wakes the thread when the
   * first may be tried. Returns when to come back (epoch ms; undefined when no node waits), or
   * false when `idle()` says events came meanwhile: the thread stays, its nodes asked again.
   */
  async stopWaitingOut(idle: () => boolean): Promise<number | undefined | false> {
    const jobs = this.#jobs;
    if (!jobs || jobs.active === 0) return undefined;
    // A wait that ends this very moment (its timer not fired yet) is woken at once.
    const retryAt = this.#ctx.refusals.nextTry(this.#thread, Date.now()) ?? Date.now();
    this.#jobs = undefined;
    await jobs.stop();
    if (idle()) return retryAt;
    this.send({ type: "jobs.resume" });
    return false;
  }
}
