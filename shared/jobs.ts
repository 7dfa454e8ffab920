import type { Message } from "./events.ts";

/** A line as the summarizer's context sees it: `id+n|text`. */
export interface ContextLine {
  id: number;
  n: number;
  text: string;
}

interface JobBase {
  thread: string;
  level: number;
  index: number;
  /** The line name `id+n`. */
  name: string;
  /** Byte limit for the summary text (`line`); up to 1.25× is accepted when smaller than the source. */
  line: number;
  /** Lines before the node, oldest first, ending where the node starts (never anything newer). */
  context: ContextLine[];
}

/** Compress message `index` into one line. */
export interface LeafJob extends JobBase {
  kind: "leaf";
  level: 0;
  message: Message & { position: number };
  /** CHAT stream sequence of the message (0 when not from a stream). */
  seq: number;
}

/** Merge two adjacent lines into their parent. */
export interface MergeJob extends JobBase {
  kind: "merge";
  left: ContextLine;
  right: ContextLine;
  /** First and last message positions the parent covers. */
  first: number;
  last: number;
  /** The covered messages, when the host chose to load them (small merges); absent otherwise. */
  messages?: (Message & { position: number })[];
}

export type SummaryJob = LeafJob | MergeJob;

export interface SummaryUsage {
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
}

export interface SummaryResult {
  text: string;
  usage?: SummaryUsage;
  /** How many model calls it took (0 for the offline summarizer). */
  calls?: number;
}

/** What every summarizer adapter implements; the host calls it and sends the result back. */
export interface Summarizer {
  readonly name: string;
  /**
   * Building a node again costs less than asking HISTORY whether it was built already (no model,
   * no network): the host skips that read, and HISTORY's write fence keeps the first text.
   */
  readonly cheap?: boolean;
  summarize(job: SummaryJob, signal?: AbortSignal): Promise<SummaryResult>;
  /** Gets ready before the first job (an offline summarizer starts its threads). */
  start?(): Promise<void>;
}

/**
 * Nodes of one thread built by one summarizer call (HISTORY_GROUP): one system prompt and one
 * view for all of them, then one input per node.
 */
export interface SummaryGroup {
  thread: string;
  line: number;
  /** The view of the group's first node: lines before it, never anything newer. */
  context: ContextLine[];
  /** In the order of the messages they start at. */
  jobs: SummaryJob[];
}

/** One text per job of the group, in its order; undefined where the reply had none usable. */
export interface GroupResult {
  texts: (string | undefined)[];
  usage?: SummaryUsage;
  calls?: number;
}

/** A summarizer that can also build a group of nodes in one call. */
export interface GroupSummarizer extends Summarizer {
  summarizeGroup(group: SummaryGroup, signal?: AbortSignal): Promise<GroupResult>;
}

export function canGroup(summarizer: Summarizer): summarizer is GroupSummarizer {
  return typeof (summarizer as Partial<GroupSummarizer>).summarizeGroup === "function";
}
