/**
 * The JSON the API answers (SPEC §8), one definition each: the services build their answers
 * with these types and the client (`outline/client`) returns them. Free of imports, so the
 * package's type declarations are this file and the client's own; test/openapi.int.test.ts
 * checks that real answers match /openapi.json.
 */

export interface OpenAIMessage {
  role: "user" | "assistant";
  content: string;
  /** The agent's own model state, sent back only when written after the last cut. */
  state?: unknown;
  steps?: unknown[];
}

export interface AnthropicTextBlock {
  type: "text";
  text: string;
  cache_control?: { type: "ephemeral" };
}

export interface AnthropicMessage {
  role: "user" | "assistant";
  content: string | AnthropicTextBlock[];
  state?: unknown;
  steps?: unknown[];
}

export interface PromptStats {
  outlineBytes: number;
  tailTokens: number;
  lines: number;
  /** Whole messages left out by the hard cap, waiting for their summaries. */
  pending: number;
}

/** GET /threads/{thread}/prompt. */
export interface PromptReply {
  messages: OpenAIMessage[] | AnthropicMessage[];
  stats: PromptStats & {
    /** Messages stored after the snapshot was written, included whole at the end. */
    newerThanSnapshot: number;
    /** CHAT sequence of the snapshot (0 when the thread has none yet). */
    snapshotSeq: number;
  };
}

export interface ZoomLine {
  id: number;
  n: number;
  text: string;
  until: string;
}

export interface ZoomMessage {
  id: string;
  /** Its number in the thread: what zoom(id, 1) takes. */
  position: number;
  from: string;
  to: string | undefined;
  role: "user" | "assistant" | "tool" | "system";
  at: string;
  text: string;
  steps?: unknown[];
}

/** GET /threads/{thread}/zoom: a line's two halves, or a message (a page of it). */
export type ZoomReply =
  | { lines: ZoomLine[] }
  | {
      message: ZoomMessage;
      page: { offset: number; limit: number; total: number; next: number | null };
      /** Where the next page starts, in words, when there is one. */
      note?: string;
    };

/** One outline line as published. `bytes` is what it adds to the outline. */
export interface SnapshotLine {
  id: number;
  n: number;
  level: number;
  text: string;
  bytes: number;
  until: string;
}

/** GET /threads/{thread}/outline: the outline snapshot. Fields may be added, none renamed. */
export interface OutlineSnapshot {
  thread: string;
  count: number;
  boundary: number;
  since: string | null;
  cutAt: string | null;
  complete: boolean;
  bytes: number;
  /**
   * Stream sequence of the newest event it reflects: applied, or passed over (a dead letter, a
   * duplicate id). A reader serves only what is stored after it as newer than the snapshot.
   */
  seq: number;
  lines: SnapshotLine[];
  /** Ids of the messages still whole, oldest first. */
  tail: string[];
  /** Their stream sequences, so a reader fetches each in one read. */
  tailSeqs: number[];
  /**
   * Summaries outstanding and cuts waiting for them: the outline may lag the log. `held`: due
   * nodes waiting for their summarizer group to fill (HISTORY_GROUP), not counted in `jobs`.
   */
  pending: { jobs: number; cuts: number; merging: boolean; held?: number };
  /** The line, tail and outline settings the thread runs under (absent in older snapshots). */
  settings?: { line: number; tail: [number, number]; outline: [number, number] };
}

/** An OpenAI function tool, as passed in a chat completion's `tools`. */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface SearchHit {
  /** The message's number: what zoom(id, 1) takes. */
  id: number;
  /** Its message id. */
  message: string;
  /** The outline line holding it (`1024+256`), or null when it is whole (the tail). */
  in: string | null;
  at: string;
  from: string;
  /** About 200 characters around the match, the match marked «like this». */
  snippet: string;
}

/** GET /threads/{thread}/search. */
export interface SearchReply {
  hits: SearchHit[];
  /** Pass as `before` for the next page; null when nothing older matches. */
  before: number | null;
}

/** An instance as it records itself in the cluster bucket. */
export interface MemberInfo {
  id: string;
  host: string;
  pid: number;
  /** ISO time it joined. */
  since: string;
  capacity: number;
  partitions: number[];
  /** Threads in memory. */
  threads: number;
  /** Events stored and not yet delivered to it, over its partitions. */
  lag: number;
  /** The settings its threads run under (`threadSettingsText`): alike on every member. */
  settings?: string;
  leaving?: boolean;
}

export interface ClusterMember extends MemberInfo {
  live: boolean;
  heardMsAgo: number;
}

/** A single-mode worker as its heartbeat (`single.<id>` in the cluster bucket) says. */
export interface SingleWorker {
  id: string;
  host: string;
  pid: number;
  /** ISO time it started. */
  since: string;
  live: boolean;
  heardMsAgo: number;
}

/** GET /cluster: who owns what. */
export interface ClusterAnswer {
  mode: "single" | "partitioned";
  members: ClusterMember[];
  partitions: number;
  /** Partition → member holding it. */
  leases: Record<string, string>;
  /** Single mode: the workers heard on the stream (more than one only beside a peer allowed). */
  workers?: SingleWorker[];
}

/** Every answer other than 200. */
export interface ErrorBody {
  error: { code: string; message: string };
}
