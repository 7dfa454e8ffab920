// The extractive summarizer's work as plain data in, plain data out, so it runs the same on the
// event loop or in a worker thread (services/summarizer/extract-thread.ts). A task's line is a
// pure function of the task's message or lines: the digests a merge is handed (those the
// summarizer held since it built the children) are what it would read from the lines anyway.
import type { ContextLine } from "../../../shared/jobs.ts";
import { addCounts, lineDigest, type Digest } from "./digest.ts";
import { leafLine, readMessage } from "./leaf.ts";
import { composeMerge } from "./merge.ts";
import type { Message } from "../../../shared/events.ts";

export interface LeafTask {
  kind: "leaf";
  message: Pick<Message, "from" | "to" | "text" | "steps">;
  position: number;
  line: number;
}

export interface MergeTask {
  kind: "merge";
  left: ContextLine;
  right: ContextLine;
  line: number;
  /**
   * Each child's digest, when the summarizer still holds it (made when the child was built):
   * read from the child's line otherwise, which gives the same digest.
   */
  leftDigest?: Digest;
  rightDigest?: Digest;
}

export type ExtractTask = LeafTask | MergeTask;

export interface ExtractResult {
  text: string;
  /** The line's digest (lineDigest), for the merge that builds the node's parent. */
  digest: Digest;
}

export function leafWork(task: LeafTask): ExtractResult {
  const { message, line } = task;
  const text = leafLine(message, readMessage(message), line);
  return { text, digest: lineDigest(text, task.position, 1) };
}

/** A child's digest if it was read from the line the job names, else read from that line now. */
function digestFor(line: ContextLine, digest: Digest | undefined): Digest {
  return digest && digest.line === line.text ? digest : lineDigest(line.text, line.id, line.n);
}

export function mergeWork(task: MergeTask): ExtractResult {
  const left = digestFor(task.left, task.leftDigest);
  const right = digestFor(task.right, task.rightDigest);
  const common = addCounts(left.common, right.common);
  const { text } = composeMerge(left.units, right.units, task.line, common);
  // Most of the line's clauses are its children's units: known, not weighed again.
  const digest = lineDigest(text, task.left.id, task.left.n + task.right.n, [left, right]);
  return { text, digest };
}

export function runTask(task: ExtractTask): ExtractResult {
  return task.kind === "leaf" ? leafWork(task) : mergeWork(task);
}
