import { not, setup, type Snapshot } from "xstate";
import { lineName } from "../shared/names.ts";
import { getNode } from "../shared/nodes.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { step, type Effect, type ThreadEvent } from "../shared/step.ts";
import { heldBack, initialThreadState, type ThreadState } from "../shared/thread.ts";

export type { Effect, SnapshotChange, ThreadEvent } from "../shared/step.ts";

/** The version of the persisted snapshot this machine writes (see `migrateSnapshot`). */
export const SNAPSHOT_VERSION = 3;

export interface ThreadInput {
  thread: string;
  settings: CoreSettings;
  /** False for a thread that existed before the system and was never imported. */
  complete?: boolean;
  /**
   * The host loads the thread's state (then sends `loaded`) and erases a deleted thread (then
   * sends `erase.done`). Without a host (tests, tools) both states are passed through at once.
   */
  hosted?: boolean;
  /** Whole messages at which chat events wait in the stream (the `backlog` state). */
  backlogLimit?: number;
}

export interface ThreadContext {
  version: typeof SNAPSHOT_VERSION;
  core: ThreadState;
  /** The node (line name `id+n`) the next cut or merge batch waits for; null when none waits. */
  waitingFor: string | null;
  backlogLimit: number;
  /** `hosted` in the input. */
  hosted: boolean;
  /**
   * The effects of the last event applied, as the step returned them: the host reads them after
   * `send` and runs them. Never persisted (`toPersisted` leaves them out; `migrateSnapshot`
   * empties them): they belong to the step that made them.
   */
  effects: readonly Effect[];
}

/** How a slot left memory: at rest (`passivated`, `drained`) or not (the rest). */
export type SlotEnd = "passivated" | "drained" | "lost" | "failed" | "abandoned";

/** What the host tells the machine about its lifecycle, besides the thread's own events. */
export type HostEvent =
  /** The stored state is read (none for a new thread); `erasing`: a delete was cut short. */
  | { type: "loaded"; core?: ThreadState; erasing?: boolean }
  /** Every purge of a deleted thread is done. */
  | { type: "erase.done" }
  /** A save is due: its linger ran out, or the worker caught up. */
  | { type: "save.due" }
  /** The loop starts the due save. */
  | { type: "save.started" }
  /** Idle for a while (`forRoom`: at rest, to make room under the actor cap): leave memory. */
  | { type: "passivate"; forRoom?: boolean }
  /** Events came during the passivation's writes: the thread stays. */
  | { type: "passivate.cancel" }
  /** The worker stops, or the thread's partition moves: final writes, then leave memory. */
  | { type: "drain" }
  /** The slot leaves memory; the actor is stopped right after. */
  | { type: "end"; end: SlotEnd };

/** What the actor is doing, most pressing first: the substates of `active`. */
export type Activity = "merging" | "cutting" | "summarizing" | "idle";

export function activityOf(core: ThreadState): Activity {
  if (core.batch !== null) return "merging";
  if (core.cuts.length > 0) return "cutting";
  if (core.inflight.length > 0 || core.wanted.length > heldBack(core)) return "summarizing";
  return "idle";
}

/** The node a merge batch or the first planned cut waits for: its first one not built. */
export function waitingFor(core: ThreadState): string | null {
  if (core.batch) return lineName(core.batch.waitingFor);
  const cut = core.cuts[0];
  if (!cut) return null;
  for (let p = core.boundary; p < cut.boundary; p++)
    if (!getNode(core.nodes, 0, p)) return lineName({ level: 0, index: p });
  return null;
}

const NO_EFFECTS: readonly Effect[] = Object.freeze([]);

// Not Infinity: the context is persisted as JSON.
const DEFAULT_BACKLOG_LIMIT = Number.MAX_SAFE_INTEGER;

function initialContext(input: ThreadInput, hosted = input.hosted === true): ThreadContext {
  return {
    version: SNAPSHOT_VERSION,
    core: initialThreadState(input.thread, input.settings, input.complete ?? true),
    waitingFor: null,
    backlogLimit: input.backlogLimit ?? DEFAULT_BACKLOG_LIMIT,
    hosted,
    effects: NO_EFFECTS,
  };
}

const machineSetup = setup({
  types: {
    context: {} as ThreadContext,
    input: {} as ThreadInput,
    events: {} as ThreadEvent | HostEvent,
  },
  guards: {
    is: ({ context }, activity: Activity) => activityOf(context.core) === activity,
    backlogged: ({ context }) => context.core.tail.length >= context.backlogLimit,
    unhosted: ({ context }) => !context.hosted,
    erasing: ({ event }) => event.type === "loaded" && event.erasing === true,
    deletedCore: ({ event }) => event.type === "loaded" && event.core?.deleted === true,
    forRoom: ({ event }) => event.type === "passivate" && event.forRoom === true,
    ends: ({ event }, end: SlotEnd) => event.type === "end" && event.end === end,
  },
});

/**
 * Applies the event through the pure step: the core after it, the node it waits for, and its
 * effects, in order, which the host reads from the context after `send` (effects as data: one
 * assign, where an emit per effect cost more than the step of a plain message).
 */
const apply = machineSetup.assign(({ context, event }) => {
  const { core, effects } = step(context.core, event as ThreadEvent);
  if (core === context.core) return { effects };
  const waiting = waitingFor(core);
  return waiting === context.waitingFor
    ? { core, effects }
    : { core, effects, waitingFor: waiting };
});

const load = machineSetup.assign(({ event }) => {
  if (event.type !== "loaded" || !event.core) return {};
  return { core: event.core, waitingFor: waitingFor(event.core) };
});

/** Eventless moves to the activity the core is in, from the substate `from`. */
function routeFrom(from: Activity) {
  return (["merging", "cutting", "summarizing", "idle"] as const)
    .filter((to) => to !== from)
    .map((to) => ({ guard: { type: "is", params: to } as const, target: to }));
}

const threadEvents = {
  "message.created": { actions: apply },
  "summary.built": { actions: apply },
  "summaries.built": { actions: apply },
  "summary.failed": { actions: apply },
  "jobs.resume": { actions: apply },
  "outbox.published": { actions: apply },
  "settings.changed": { actions: apply },
  "thread.deleted": { target: "#thread.thread.erasing", actions: apply },
} as const;

/** What a deleted thread takes: the step refuses each (a skipped effect the host acts on). */
const refusedEvents = {
  "message.created": { actions: apply },
  "thread.deleted": { actions: apply },
} as const;

/** `end` from any state of the slot but `ended`: to the end it names. */
const ends = (["passivated", "drained", "lost", "failed", "abandoned"] as const).map((end) => ({
  guard: { type: "ends", params: end } as const,
  target: `#thread.slot.ended.${end}`,
}));

/** The state value of a thread doing `thread` in a slot that is open. */
function valueOf(thread: string | Record<string, string>): Record<string, unknown> {
  return { thread, slot: "open" };
}

/**
 * The thread actor: the chart an operator debugs, over the pure step (shared/step.ts). Two
 * regions side by side: `thread`, what the thread's log has made of it (loaded, its activity, a
 * backlog, a delete); `slot`, what its host is doing with it (open to events, a save due, a
 * passivation or a drain under way, ended). It runs no I/O: each event's effects
 * (`requestSummary`, `snapshotChanged`, `skipped`, `erased`) are left in the context for the
 * host, and summaries come back as events keyed by (level, index), so a persisted snapshot holds
 * no promise and no timer.
 */
export const threadMachine = machineSetup.createMachine({
  id: "thread",
  context: ({ input }) => initialContext(input),
  type: "parallel",
  states: {
    thread: {
      initial: "loading",
      states: {
        /** The host reads the stored state (KV, then the tail from CHAT and texts from HISTORY). */
        loading: {
          always: { guard: "unhosted", target: "active" },
          on: {
            loaded: [
              { guard: "erasing", target: "erasing", actions: load },
              { guard: "deletedCore", target: "deleted", actions: load },
              { target: "active", actions: load },
            ],
          },
        },
        active: {
          initial: "idle",
          // Below the substates' routes: a backlog is entered once the activity is settled.
          always: { guard: "backlogged", target: "backlog" },
          on: threadEvents,
          states: {
            idle: { always: routeFrom("idle") },
            /** Summaries asked for, none of them blocking a cut yet. */
            summarizing: { always: routeFrom("summarizing") },
            /** A cut is decided and waits for its leaving leaves (`waitingFor`). */
            cutting: { always: routeFrom("cutting") },
            /** A merge batch waits for a parent being built (`waitingFor`). */
            merging: { always: routeFrom("merging") },
          },
        },
        /** So many whole messages wait for summaries that new chat events wait in the stream. */
        backlog: {
          always: { guard: not("backlogged"), target: "active" },
          on: threadEvents,
        },
        /** thread.deleted applied: the host purges CHAT, HISTORY, the id index and the snapshot. */
        erasing: {
          always: { guard: "unhosted", target: "deleted" },
          on: { ...refusedEvents, "erase.done": "deleted" },
        },
        /** Erased. Later messages are refused (the host dead-letters them), summaries ignored. */
        deleted: { on: refusedEvents },
      },
    },
    slot: {
      initial: "open",
      states: {
        /** Events are applied as they come, each burst saved before it is acknowledged. */
        open: {
          on: {
            "save.due": "saving",
            passivate: [{ guard: "forRoom", target: "passivating.room" }, "passivating"],
            drain: "draining",
            end: ends,
          },
        },
        /** A save is due (its linger ran out, or the worker caught up): the loop writes it next. */
        saving: {
          on: {
            "save.started": "open",
            passivate: [{ guard: "forRoom", target: "passivating.room" }, "passivating"],
            drain: "draining",
            end: ends,
          },
        },
        /**
         * Final writes, then out of memory unless events came meanwhile (`passivate.cancel`).
         * Their writes save whatever a save due would have.
         */
        passivating: {
          initial: "idle",
          on: { "passivate.cancel": "open", drain: "draining", end: ends },
          states: {
            /** Idle for a while (the worker's idle sweep). */
            idle: {},
            /** At rest, to make room under the actor cap for a thread waiting. */
            room: {},
          },
        },
        /** The worker stops or the partition moves: queued events applied or left, final writes. */
        draining: { on: { end: ends } },
        /** Out of memory; the next event for the thread loads it again in a new slot. */
        ended: {
          // Always entered by name (`end`); XState asks for an initial state all the same.
          initial: "passivated",
          states: {
            /** Stored at rest after being idle. */
            passivated: { type: "final" },
            /** Stored at rest by a drain. */
            drained: { type: "final" },
            /** Another writer won the state's fence: the thread is someone else's now. */
            lost: { type: "final" },
            /** An error; nothing of the burst was acknowledged, so its events come back. */
            failed: { type: "final" },
            /** A hard stop: nothing more written or acknowledged. */
            abandoned: { type: "final" },
          },
        },
      },
    },
  },
});

export type ThreadMachine = typeof threadMachine;

/**
 * A hosted thread that was never stored, as `loaded` with nothing leaves it: its host starts the
 * actor from this snapshot, as there is nothing to load. XState's initial transition and
 * `loaded` cost a fresh worker about 0.1 ms per new thread, their code still cold (bench e2e).
 */
export function newThreadSnapshot(input: ThreadInput): Snapshot<unknown> {
  const context = initialContext(input, true);
  return {
    status: "active",
    output: undefined,
    error: undefined,
    value: valueOf({ active: activityOf(context.core) }),
    historyValue: {},
    children: {},
    context,
  } as Snapshot<unknown>;
}

/** A persisted snapshot of any version: XState's fields, and a context holding at least the core. */
export interface PersistedThreadSnapshot {
  value?: unknown;
  context: { core: ThreadState; version?: number } & Partial<ThreadContext>;
  [key: string]: unknown;
}

/**
 * A persisted snapshot as this machine restores it, without effects (those of the step before
 * the save ran then), its slot open. Version 2 had the thread's states alone (no `slot` region).
 * Version 1 (no `version`) had flat states (`idle`, `summarizing`, `cutting`, `merging`,
 * `deleted`, the transient `route`) and only the core in its context.
 */
export function migrateSnapshot(
  persisted: PersistedThreadSnapshot,
  backlogLimit = DEFAULT_BACKLOG_LIMIT,
): PersistedThreadSnapshot {
  const context = persisted.context;
  if (context.version === SNAPSHOT_VERSION) {
    return context.effects?.length === 0
      ? persisted
      : { ...persisted, context: { ...context, effects: NO_EFFECTS } };
  }
  if (context.version === 2) {
    const value = valueOf(persisted.value as string | Record<string, string>);
    return {
      ...persisted,
      value,
      context: { ...context, version: SNAPSHOT_VERSION, effects: NO_EFFECTS },
    };
  }
  const core = context.core;
  const value = valueOf(core.deleted ? "deleted" : { active: activityOf(core) });
  const migrated: ThreadContext = {
    version: SNAPSHOT_VERSION,
    core,
    waitingFor: waitingFor(core),
    backlogLimit,
    hosted: false,
    effects: NO_EFFECTS,
  };
  return { ...persisted, value, context: migrated };
}
