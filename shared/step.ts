import { lazyJobFor } from "./job-view.ts";
import type { Message } from "./events.ts";
import type { SummaryJob } from "./jobs.ts";
import type { NodeRef } from "./names.ts";
import type { ThreadSettings } from "./settings.ts";
import {
  appendMessage,
  deleteThread,
  outboxPublished,
  restartJobs,
  summariesBuilt,
  summaryBuilt,
  summaryFailed,
  takeJobs,
  withSettings,
  type AppendOutcome,
  type ThreadState,
} from "./thread.ts";

/** A stored `message.created`. `firstSeq`: the id index names an earlier copy of its id. */
export interface MessageCreated {
  type: "message.created";
  message: Message;
  /** Stream sequence (0 or absent when not from a stream). */
  seq?: number;
  firstSeq?: number;
}

export interface ThreadDeleted {
  type: "thread.deleted";
  at: string;
  seq?: number;
}

/** A CHAT event as a thread takes it, live or replayed. */
export type ChatLogEvent = MessageCreated | ThreadDeleted;

/** Everything a thread takes: its log, and what the host reports back. */
export type ThreadEvent =
  | ChatLogEvent
  /** The summarizer's answer for a node the thread asked for. */
  | ({ type: "summary.built"; text: string } & NodeRef)
  /**
   * Several answers that came back together, applied in order as `summary.built` each, then
   * one hand-out of jobs and one snapshotChanged: one step for a burst of them.
   */
  | { type: "summaries.built"; nodes: readonly BuiltNode[] }
  | ({ type: "summary.failed"; reason: string } & NodeRef)
  /** After a restore: summaries that were in flight are asked again. */
  | { type: "jobs.resume" }
  /** The host published the first `count` outbox nodes (free nodes) to HISTORY. */
  | { type: "outbox.published"; count: number }
  /** The thread runs under these line, tail and outline settings from its next event on. */
  | { type: "settings.changed"; settings: ThreadSettings };

/** A summary's answer for a node. */
export type BuiltNode = { text: string } & NodeRef;

/** A message the thread did not apply, and why. */
export type Skip = Exclude<AppendOutcome, { type: "applied" }>;

/** What the host does after a step, in order. */
export type Effect =
  | { type: "requestSummary"; job: SummaryJob }
  /** The outline or the tail may have changed: the host coalesces snapshot writes. */
  | { type: "snapshotChanged"; thread: string; seq: number; count: number; boundary: number }
  /** `messageId` is empty for a thread.deleted of a thread deleted already. */
  | { type: "skipped"; thread: string; outcome: Skip; messageId: string; seq: number }
  /** The thread was deleted: the host purges its streams and index. */
  | { type: "erased"; thread: string; seq: number };

export type SnapshotChange = Omit<Extract<Effect, { type: "snapshotChanged" }>, "type">;

export interface Step {
  core: ThreadState;
  effects: Effect[];
}

const NO_EFFECTS: readonly Effect[] = Object.freeze([]);

/**
 * The one fold of a thread: the core after `event`, and the effects the host runs, as data. The
 * machine, the worker and `outline replay` all apply events through it.
 */
export function step(core: ThreadState, event: ThreadEvent): Step {
  if (core.deleted) return deletedStep(core, event);
  const effects: Effect[] = [];
  switch (event.type) {
    case "message.created": {
      const seq = event.seq ?? 0;
      const { state, outcome } = appendMessage(core, event.message, seq, event.firstSeq);
      if (outcome.type === "applied") core = state;
      else effects.push(skipped(core, outcome, event.message.id, seq));
      core = dispatch(core, effects);
      effects.push(changed(core));
      break;
    }
    case "summary.built":
      core = summaryBuilt(core, { level: event.level, index: event.index }, event.text).state;
      core = dispatch(core, effects);
      effects.push(changed(core));
      break;
    case "summaries.built":
      core = summariesBuilt(core, event.nodes);
      core = dispatch(core, effects);
      effects.push(changed(core));
      break;
    case "summary.failed":
      core = dispatch(summaryFailed(core, { level: event.level, index: event.index }), effects);
      break;
    case "jobs.resume":
      core = dispatch(restartJobs(core), effects);
      break;
    case "settings.changed":
      // Nothing visible changes until the next message: no effect.
      return { core: withSettings(core, event.settings), effects };
    case "outbox.published":
      // Changes neither the outline nor the jobs: no snapshotChanged (the host saves after it).
      return { core: outboxPublished(core, event.count), effects };
    case "thread.deleted": {
      const erased = deleteThread(core);
      const seq = Math.max(erased.seq, event.seq ?? 0);
      return {
        core: { ...erased, seq },
        effects: [{ type: "erased", thread: core.thread, seq }],
      };
    }
  }
  return { core, effects };
}

/**
 * The one place a deleted thread's events are decided: a message is refused (the host
 * dead-letters it), a thread.deleted again is a duplicate (the host counts it), the rest ignored.
 */
function deletedStep(core: ThreadState, event: ThreadEvent): Step {
  if (event.type === "thread.deleted") {
    const outcome: Skip = { type: "duplicate", reason: "thread deleted already" };
    return { core, effects: [skipped(core, outcome, "", event.seq ?? 0)] };
  }
  if (event.type !== "message.created") return { core, effects: NO_EFFECTS as Effect[] };
  const seq = event.seq ?? 0;
  // Refused whatever the message: `appendMessage` says so in words the dead letter keeps.
  const { outcome } = appendMessage(core, event.message, seq);
  return { core, effects: [skipped(core, outcome as Skip, event.message.id, seq)] };
}

/** Hands out jobs up to the concurrency limit, each as a requestSummary effect. */
function dispatch(core: ThreadState, effects: Effect[]): ThreadState {
  // Nothing wanted, nothing to hand out (most messages): no result objects to make per event.
  if (core.wanted.length === 0) return core;
  const { state, started } = takeJobs(core);
  for (const ref of started) effects.push({ type: "requestSummary", job: lazyJobFor(state, ref) });
  return started.length === 0 ? core : state;
}

function changed(core: ThreadState): Effect {
  const { thread, seq, count, boundary } = core;
  return { type: "snapshotChanged", thread, seq, count, boundary };
}

function skipped(core: ThreadState, outcome: Skip, messageId: string, seq: number): Effect {
  return { type: "skipped", thread: core.thread, outcome, messageId, seq };
}
