import { setup } from "xstate";
import type { SummaryJob } from "../shared/jobs.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  step as stepOf,
  type Effect,
  type SnapshotChange,
  type Step,
  type ThreadEvent,
} from "../shared/step.ts";
import {
  heldBack,
  initialThreadState,
  type AppendOutcome,
  type ThreadState,
} from "../shared/thread.ts";

export type { SnapshotChange, ThreadEvent } from "../shared/step.ts";

export interface ThreadInput {
  thread: string;
  settings: CoreSettings;
  /** False for a thread that existed before the system and was never imported. */
  complete?: boolean;
}

export interface ThreadContext {
  core: ThreadState;
}

/** The state that says what the actor is doing now, most pressing first. */
type Activity = "merging" | "cutting" | "summarizing" | "idle";

function activityOf(core: ThreadState): Activity {
  if (core.batch !== null) return "merging";
  if (core.cuts.length > 0) return "cutting";
  if (core.inflight.length > 0 || core.wanted.length > heldBack(core)) return "summarizing";
  return "idle";
}

/** An effect as the action of the same name, its fields as params. */
const asAction = (effect: Effect) => ({ type: effect.type, params: effect }) as never;

// The step of the event being taken, computed once for the guards and the action: XState
// evaluates a transition's guards before its actions, and the target depends on the state after.
let memo: { context: ThreadContext; event: ThreadEvent; step: Step } | undefined;

function stepFor(context: ThreadContext, event: ThreadEvent): Step {
  if (memo?.context !== context || memo.event !== event) {
    memo = { context, event, step: stepOf(context.core, event) };
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

/** Applies the event's step: its new core, then its effects in order. */
const apply = threadSetup.enqueueActions(({ context, event, enqueue }) => {
  const step = stepFor(context, event);
  memo = undefined;
  if (step.core !== context.core) enqueue.assign({ core: step.core });
  for (const effect of step.effects) enqueue(asAction(effect));
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
        : stepOf(context.core, event);
    memo = undefined;
    return step.effects[0] as SnapshotChange;
  },
} as const;
const applyPlain = [applyCore, changed] as const;

function isPlain(step: Step): boolean {
  return step.effects.length === 1 && step.effects[0]?.type === "snapshotChanged";
}

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
    "outbox.published": { actions: apply },
    "thread.deleted": { target: ".deleted", actions: apply },
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
        "message.created": { actions: apply },
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
