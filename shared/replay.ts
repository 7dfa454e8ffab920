import { jobFor } from "./job-view.ts";
import type { SummaryJob } from "./jobs.ts";
import {
  answerWanted,
  appendAll,
  type LogEntry,
  type NodeTexts,
  type ThreadState,
} from "./thread.ts";

export type { NodeTexts } from "./thread.ts";

/** Gives the text of a node synchronously from the job a model would be sent. */
export type InstantSummaries = (job: SummaryJob) => string;

/**
 * Answers every job the thread asks for, at once, until nothing is outstanding, by node: stored
 * summaries on replay (looked up by level and index), an instant summarizer in a bench. Free
 * nodes are taken out of the outbox (a replay has them in HISTORY already). No job is built: a
 * stored text does not depend on the context a model would have been sent.
 */
export function answerByRef(state: ThreadState, texts: NodeTexts): ThreadState {
  return answerWanted(state, texts);
}

/** `answerByRef` with a summarizer that reads the whole job (its context is built per node). */
export function answerAll(state: ThreadState, summaries: InstantSummaries): ThreadState {
  return answerByRef(state, (ref, s) => summaries(jobFor(s, ref)));
}

/** Rebuilds a thread from its log with summaries answered at once (one transition). */
export function replayLog(
  initial: ThreadState,
  log: readonly LogEntry[],
  summaries: InstantSummaries,
): ThreadState {
  return appendAll(initial, log, (ref, s) => summaries(jobFor(s, ref))).state;
}
