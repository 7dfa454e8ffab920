// The extractive summarizer's work as plain data in, plain data out, so it runs the same on the
// event loop or in a worker thread (services/summarizer/extract-thread.ts).
import type { ContextLine } from "../../../shared/jobs.ts";
import { addCounts, lineDigest, messageDigest, parentUnits, type Digest } from "./digest.ts";
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
  /** What each child covers, when this process still holds it; else read from its line. */
  leftDigest?: Digest;
  rightDigest?: Digest;
}

export type ExtractTask = LeafTask | MergeTask;

export interface ExtractResult {
  text: string;
  digest: Digest;
}

export function leafWork(task: LeafTask): ExtractResult {
  const { message, line } = task;
  const read = readMessage(message);
  const text = leafLine(message, read, line);
  const sentences = read.ideas.flatMap((idea) => idea.sentences);
  return {
    text,
    digest: messageDigest(text, message.from, task.position, sentences, read.entities),
  };
}

/** A child's digest if it belongs to the line the job names, else one read from that line. */
function digestFor(line: ContextLine, digest: Digest | undefined): Digest {
  return digest && digest.line === line.text ? digest : lineDigest(line.text, line.id, line.n);
}

export function mergeWork(task: MergeTask): ExtractResult {
  const left = digestFor(task.left, task.leftDigest);
  const right = digestFor(task.right, task.rightDigest);
  const common = addCounts(left.common, right.common);
  const { text, shown } = composeMerge(left.units, right.units, task.line, common);
  const units = parentUnits(left.units, right.units, shown);
  return { text, digest: { line: text, units, common } };
}

export function runTask(task: ExtractTask): ExtractResult {
  return task.kind === "leaf" ? leafWork(task) : mergeWork(task);
}
