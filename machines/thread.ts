import { assign, setup } from "xstate";
import { lazyJobFor } from "../shared/job-view.ts";
import type { Message } from "../shared/events.ts";
import type { SummaryJob } from "../shared/jobs.ts";
import type { NodeRef } from "../shared/names.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  appendMessage,
  deleteThread,
  heldBack,
  initialThreadState,
  outboxPublished,
  restartJobs,
  summaryBuilt,
  summaryFailed,
  takeJobs,
  type AppendOutcome,
  type ThreadState,
} from "../shared/thread.ts";

export type ThreadEvent =
  /** A stored `message.created`, with its stream sequence. */
  | { type: "message.created"; message: Message; seq?: number }
  | { type: "thread.deleted"; at: string; seq?: number }
  /** The summarizer's answer for a node the actor asked for. */
  | ({ type: "summary.built"; text: string } & NodeRef)
  | ({ type: "summary.failed"; reason: string } & NodeRef)
  /** After a restore: summaries that were in flight are asked again. */
  | { type: "jobs.resume" }
  /** The host published the first `count` outbox nodes (free nodes) to HISTORY. */
  | { type: "outbox.published"; count: number };

export interface ThreadInput {
  thread: string;
  settings: CoreSettings;
  /** False for a thread that existed before the system and was never imported. */
  complete?: boolean;
}

export interface ThreadContext {
  core: ThreadState;
}

/** What the host learns after a change, to coalesce snapshot writes. */
export interface SnapshotChange {
  thread: string;
  seq: number;
  count: number;
  boundary: number;
}

type Effect =
  | { type: "requestSummary"; params: { job: SummaryJob } }
  | { type: "snapshotChanged"; params: SnapshotChange }
  | {
      type: "skipped";
      params: {
        thread: string;
        outcome: Exclude<AppendOutcome, { type: "applied" }>;
        messageId: string;
        seq: number;
      };
    };

/** What a routed event does: the core after it, and its effects in the order they run. */
interface Step {
  core: ThreadState;
  effects: Effect[];
}

type RoutedEvent = Exclude<ThreadEvent, { type: "thread.deleted" } | { type: "outbox.published" }>;

/** The state that says what the actor is doing now, most pressing first. */
type Activity = "merging" | "cutting" | "summarizing" | "idle";

function activityOf(core: ThreadState): Activity {
  if (core.batch !== null) return "merging";
  if (core.cuts.length > 0) return "cutting";
  if (core.inflight.length > 0 || core.wanted.length > heldBack(core)) return "summarizing";
  return "idle";
}

/** Hands out jobs up to the concurrency limit, each as a requestSummary effect. */
function dispatch(core: ThreadState, effects: Effect[]): ThreadState {
  // Nothing wanted, nothing to hand out (most messages): no result objects to make per event.
  if (core.wanted.length === 0) return core;
  const { state, started } = takeJobs(core);
  if (started.length === 0) return core;
  for (const ref of started)
    effects.push({ type: "requestSummary", params: { job: lazyJobFor(state, ref) } });
  return state;
}

function notify(core: ThreadState, effects: Effect[]): void {
  effects.push({
    type: "snapshotChanged",
    params: { thread: core.thread, seq: core.seq, count: core.count, boundary: core.boundary },
  });
}

/** The pure step of an event that ends in one of the activity states. */
function stepOf(core: ThreadState, event: RoutedEvent): Step {
  const effects: Effect[] = [];
  switch (event.type) {
    case "message.created": {
      const { state, outcome } = appendMessage(core, event.message, event.seq ?? 0);
      if (outcome.type !== "applied") {
        effects.push({
          type: "skipped",
          params: {
            thread: state.thread,
            outcome,
            messageId: event.message.id,
            seq: event.seq ?? 0,
          },
        });
      } else core = state;
      core = dispatch(core, effects);
      notify(core, effects);
      break;
    }
    case "summary.built":
      core = summaryBuilt(core, { level: event.level, index: event.index }, event.text).state;
      core = dispatch(core, effects);
      notify(core, effects);
      break;
    case "summary.failed":
      core = dispatch(summaryFailed(core, { level: event.level, index: event.index }), effects);
      break;
    case "jobs.resume":
      core = dispatch(restartJobs(core), effects);
      break;
  }
  return { core, effects };
}

// The step of the event being taken, computed once for the guards and the action: XState
// evaluates a transition's guards before its actions, and the target depends on the state after.
let memo: { context: ThreadContext; event: ThreadEvent; step: Step } | undefined;

function stepFor(context: ThreadContext, event: ThreadEvent): Step {
  if (memo?.context !== context || memo.event !== event) {
    memo = { context, event, step: stepOf(context.core, event as RoutedEvent) };
  }
  return memo.step;
}

/**
 * The thread actor: a thin shell over the pure core. It never runs a model call itself: it names
 * the effects (`requestSummary`, `snapshotChanged`, `skipped`, `erased`) and the host provides
 * them with `.provide({ actions })`. Summaries come back as events keyed by (level, index), so a
 * persisted snapshot holds no in-flight promise and no timer.
 */
const threadSetup = setup({
  types: {
    context: {} as ThreadContext,
    input: {} as ThreadInput,
    events: {} as ThreadEvent,
  },
  actions: {
    // Effects, provided by the host. The defaults do nothing so pure transitions can be tested.
    requestSummary: (_, _params: { job: SummaryJob }) => {},
    snapshotChanged: (_, _params: SnapshotChange) => {},
    skipped: (
      _,
      _params: {
        thread: string;
        outcome: Exclude<AppendOutcome, { type: "applied" }>;
        messageId: string;
        seq: number;
      },
    ) => {},
    erased: (_, _params: { thread: string; seq: number }) => {},

    published: assign(({ context, event }) => {
      if (event.type !== "outbox.published") return {};
      return { core: outboxPublished(context.core, event.count) };
    }),
  },
  guards: {
    /** The event leads to this activity state. */
    leadsTo: ({ context, event }, activity: Activity) =>
      activityOf(stepFor(context, event).core) === activity,
    /** The event leads to this activity state and its only effect is snapshotChanged. */
    plainTo: ({ context, event }, activity: Activity) => {
      const step = stepFor(context, event);
      return activityOf(step.core) === activity && isPlain(step);
    },
    merging: ({ context }) => activityOf(context.core) === "merging",
    cutting: ({ context }) => activityOf(context.core) === "cutting",
    summarizing: ({ context }) => activityOf(context.core) === "summarizing",
  },
});

const append = threadSetup.enqueueActions(({ context, event, enqueue }) => {
  if (event.type !== "message.created") return;
  const { state, outcome } = appendMessage(context.core, event.message, event.seq ?? 0);
  if (outcome.type !== "applied") {
    enqueue({
      type: "skipped",
      params: { thread: state.thread, outcome, messageId: event.message.id, seq: event.seq ?? 0 },
    });
    return;
  }
  enqueue.assign({ core: state });
});

/** Applies the event's step: its new core, then its effects in order. */
const apply = threadSetup.enqueueActions(({ context, event, enqueue }) => {
  const step = stepFor(context, event);
  memo = undefined;
  if (step.core !== context.core) enqueue.assign({ core: step.core });
  for (const effect of step.effects) enqueue(effect);
});

/**
 * The same for a plain step, whose only effect is snapshotChanged (most messages and summaries):
 * two fixed actions instead of enqueueActions, which builds its `enqueue` helpers per call.
 */
const applyCore = threadSetup.assign(({ context, event }) => ({
  core: stepFor(context, event).core,
}));
const changed = {
  type: "snapshotChanged",
  // After applyCore: the step's core is the context's now.
  params: ({ context, event }: { context: ThreadContext; event: ThreadEvent }): SnapshotChange => {
    const step =
      memo?.event === event && memo.step.core === context.core
        ? memo.step
        : stepOf(context.core, event as RoutedEvent);
    memo = undefined;
    return (step.effects[0] as Extract<Effect, { type: "snapshotChanged" }>).params;
  },
} as const;
const applyPlain = [applyCore, changed] as const;

function isPlain(step: Step): boolean {
  return step.effects.length === 1 && step.effects[0]?.type === "snapshotChanged";
}

const erase = threadSetup.enqueueActions(({ context, event, enqueue }) => {
  if (event.type !== "thread.deleted") return;
  const core = deleteThread(context.core);
  const seq = Math.max(core.seq, event.seq ?? 0);
  enqueue.assign({ core: { ...core, seq } });
  enqueue({ type: "erased", params: { thread: core.thread, seq } });
});

/**
 * The transitions of an event that changes the core: straight to the state that says what the
 * actor does after it (one microstep, no transient state), its step applied on the way.
 */
const routed = [
  { guard: { type: "plainTo", params: "merging" }, target: ".merging", actions: applyPlain },
  { guard: { type: "leadsTo", params: "merging" }, target: ".merging", actions: apply },
  { guard: { type: "plainTo", params: "cutting" }, target: ".cutting", actions: applyPlain },
  { guard: { type: "leadsTo", params: "cutting" }, target: ".cutting", actions: apply },
  {
    guard: { type: "plainTo", params: "summarizing" },
    target: ".summarizing",
    actions: applyPlain,
  },
  { guard: { type: "leadsTo", params: "summarizing" }, target: ".summarizing", actions: apply },
  { guard: { type: "plainTo", params: "idle" }, target: ".idle", actions: applyPlain },
  { target: ".idle", actions: apply },
] as const;

/**
 * In an activity state, an event that leads back to it stays without a target: XState then
 * neither exits nor re-enters the state. Any other outcome falls through to the root's `routed`.
 */
function staying(activity: Activity) {
  const stay = [
    { guard: { type: "plainTo", params: activity }, actions: applyPlain },
    { guard: { type: "leadsTo", params: activity }, actions: apply },
  ] as const;
  return {
    on: {
      "message.created": stay,
      "summary.built": stay,
      "summary.failed": stay,
      "jobs.resume": stay,
    },
  };
}

export const threadMachine = threadSetup.createMachine({
  id: "thread",
  context: ({ input }) => ({
    core: initialThreadState(input.thread, input.settings, input.complete ?? true),
  }),
  initial: "route",
  on: {
    "message.created": routed,
    "summary.built": routed,
    "summary.failed": routed,
    "jobs.resume": routed,
    // Changes neither the outline nor the jobs, so no snapshotChanged: the host saves after it.
    "outbox.published": { actions: ["published"] },
    "thread.deleted": { target: ".deleted", actions: [erase] },
  },
  states: {
    /**
     * Transient: picks the state from the core. Only the initial state goes through it (and a
     * snapshot persisted by an older machine, whose events all went through it).
     */
    route: {
      always: [
        { guard: "merging", target: "merging" },
        { guard: "cutting", target: "cutting" },
        { guard: "summarizing", target: "summarizing" },
        { target: "idle" },
      ],
    },
    idle: staying("idle"),
    /** Summaries asked for, none of them blocking a cut yet. */
    summarizing: staying("summarizing"),
    /** A cut is decided and waits for its leaving leaves. */
    cutting: staying("cutting"),
    /** A merge batch waits for a parent being built. */
    merging: staying("merging"),
    /** Erased. Later messages are refused (the host dead-letters them), summaries ignored. */
    deleted: {
      on: {
        "message.created": { actions: append },
        "summary.built": {},
        "summary.failed": {},
        "jobs.resume": {},
        "outbox.published": {},
        "thread.deleted": {},
      },
    },
  },
});

export type ThreadMachine = typeof threadMachine;
