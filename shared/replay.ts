import { jobFor } from "./context.ts";
import type { Message } from "./events.ts";
import type { SummaryJob } from "./jobs.ts";
import {
  appendMessage,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "./thread.ts";

/** Gives the text of a node synchronously: stored summaries on replay, an instant summarizer in a bench. */
export type InstantSummaries = (job: SummaryJob) => string;

/**
 * Answers every job the thread asks for, at once, until nothing is outstanding. Free nodes are
 * taken out of the outbox (a replay has them in HISTORY already).
 */
export function answerAll(state: ThreadState, summaries: InstantSummaries): ThreadState {
  let s = state;
  for (;;) {
    const taken = takeJobs(s, Number.MAX_SAFE_INTEGER);
    if (taken.started.length === 0) return outboxPublished(taken.state, taken.state.outbox.length);
    s = taken.state;
    for (const ref of taken.started) {
      const text = summaries(jobFor(s, ref));
      s = summaryBuilt(s, ref, text).state;
    }
  }
}

/** Rebuilds a thread from its log with summaries answered at once. */
export function replayLog(
  initial: ThreadState,
  log: Iterable<{ message: Message; seq?: number }>,
  summaries: InstantSummaries,
): ThreadState {
  let s = initial;
  for (const { message, seq } of log) {
    s = appendMessage(s, message, seq ?? 0).state;
    s = answerAll(s, summaries);
  }
  return s;
}
