// The thread's fold (SPEC §4), by job: the state (thread-state.ts), appending messages
// (thread-append.ts), summaries coming back (thread-summaries.ts), jobs and the outbox
// (thread-jobs.ts); building nodes, cuts and the tail's id index are theirs (thread-build.ts,
// thread-cuts.ts, thread-tail-ids.ts). Importers take the public names from here.
export { appendAll, appendMessage, type AppendOutcome, type LogEntry } from "./thread-append.ts";
export {
  blockingNodes,
  deleteThread,
  groupSize,
  heldBack,
  isAtRest,
  isSettled,
  outboxPublished,
  restartJobs,
  summaryFailed,
  takeJobs,
} from "./thread-jobs.ts";
export {
  findBuilt,
  initialThreadState,
  outlineIndexOf,
  tailEntry,
  withSettings,
  type OutboxNode,
  type PendingCut,
  type TailEntry,
  type ThreadState,
  type ThreadStats,
} from "./thread-state.ts";
export {
  answerWanted,
  boundedSummary,
  summariesBuilt,
  summaryBuilt,
  type BuiltOutcome,
  type NodeTexts,
} from "./thread-summaries.ts";
