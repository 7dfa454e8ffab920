import { assign, setup } from "xstate";
import { jobFor } from "../shared/context.ts";
import type { Message } from "../shared/events.ts";
import type { SummaryJob } from "../shared/jobs.ts";
import type { NodeRef } from "../shared/names.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  appendMessage,
  deleteThread,
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

    build: assign(({ context, event }) => {
      if (event.type !== "summary.built") return {};
      return {
        core: summaryBuilt(context.core, { level: event.level, index: event.index }, event.text)
          .state,
      };
    }),
    fail: assign(({ context, event }) => {
      if (event.type !== "summary.failed") return {};
      return { core: summaryFailed(context.core, { level: event.level, index: event.index }) };
    }),
    resume: assign(({ context }) => ({ core: restartJobs(context.core) })),
    published: assign(({ context, event }) => {
      if (event.type !== "outbox.published") return {};
      return { core: outboxPublished(context.core, event.count) };
    }),
  },
  guards: {
    merging: ({ context }) => context.core.batch !== null,
    cutting: ({ context }) => context.core.cuts.length > 0,
    summarizing: ({ context }) =>
      context.core.inflight.length > 0 || context.core.wanted.length > 0,
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

const erase = threadSetup.enqueueActions(({ context, event, enqueue }) => {
  if (event.type !== "thread.deleted") return;
  const core = deleteThread(context.core);
  const seq = Math.max(core.seq, event.seq ?? 0);
  enqueue.assign({ core: { ...core, seq } });
  enqueue({ type: "erased", params: { thread: core.thread, seq } });
});

/** Hands out jobs up to the concurrency limit, each as a requestSummary effect. */
const dispatch = threadSetup.enqueueActions(({ context, enqueue }) => {
  const { state, started } = takeJobs(context.core);
  if (started.length === 0) return;
  enqueue.assign({ core: state });
  for (const ref of started)
    enqueue({ type: "requestSummary", params: { job: jobFor(state, ref) } });
});

const notify = threadSetup.enqueueActions(({ context, enqueue }) => {
  const core = context.core;
  enqueue({
    type: "snapshotChanged",
    params: { thread: core.thread, seq: core.seq, count: core.count, boundary: core.boundary },
  });
});

export const threadMachine = threadSetup.createMachine({
  id: "thread",
  context: ({ input }) => ({
    core: initialThreadState(input.thread, input.settings, input.complete ?? true),
  }),
  initial: "route",
  on: {
    "message.created": { target: ".route", actions: [append, dispatch, notify] },
    "summary.built": { target: ".route", actions: ["build", dispatch, notify] },
    "summary.failed": { target: ".route", actions: ["fail", dispatch] },
    "jobs.resume": { target: ".route", actions: ["resume", dispatch] },
    // Changes neither the outline nor the jobs, so no snapshotChanged: the host saves after it.
    "outbox.published": { actions: ["published"] },
    "thread.deleted": { target: ".deleted", actions: [erase] },
  },
  states: {
    /** Transient: picks the state that says what the actor is doing now. */
    route: {
      always: [
        { guard: "merging", target: "merging" },
        { guard: "cutting", target: "cutting" },
        { guard: "summarizing", target: "summarizing" },
        { target: "idle" },
      ],
    },
    idle: {},
    /** Summaries asked for, none of them blocking a cut yet. */
    summarizing: {},
    /** A cut is decided and waits for its leaving leaves. */
    cutting: {},
    /** A merge batch waits for a parent being built. */
    merging: {},
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
