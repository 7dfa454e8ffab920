// The explorer's JSON (under /ui/api/), shared by the server and the page (ui/): types only, so
// the page's bundle takes nothing of the server with it.

import type { ActorReport, ActorTransition } from "../nats/actor-feed.ts";
import type { OutlineSnapshot, SnapshotLine } from "../../shared/snapshot.ts";

export type { ActorReport, ActorTransition, OutlineSnapshot, SnapshotLine };

/** One thread in the list: what its snapshot says, and when it was last written. */
export interface ThreadRow {
  thread: string;
  /** The snapshot's sequence in the bucket's stream: pages continue before it. */
  cursor: number;
  /** When the snapshot was last written (ISO). */
  updated: string;
  count?: number;
  boundary?: number;
  lines?: number;
  bytes?: number;
  tail?: number;
  cutAt?: string | null;
  pending?: OutlineSnapshot["pending"];
}

export interface ThreadPage {
  threads: ThreadRow[];
  /** `before` for the next page, or null at the end. */
  next: number | null;
  /** Keys in the bucket's stream (threads, and deleted ones' markers). */
  total: number;
  /** Keys looked at for this page. */
  scanned: number;
  /** The scan stopped at its limit before the page was full (a rare filter): `next` goes on. */
  partial: boolean;
}

/** The actor states of listed threads; a thread missing has no live actor. */
export interface ActorStatesBody {
  actors: Record<string, ActorReport>;
}

/** One thread's actor: live on a worker (its state and last transitions), or not in memory. */
export interface ActorBody {
  live: boolean;
  actor?: ActorReport;
}

/** The next merge: the most due sibling pair of the outline (SPEC §4, step 5). */
export interface NextMerge {
  /** Index in `lines` of the pair's left line. */
  index: number;
  /** `(T − last) / 2^l` */
  due: number;
}

export interface Settings {
  line: number;
  tail: [number, number];
  outline: [number, number];
}

/** Where the next cut falls, from the tail's costs now (SPEC §4, steps 2 and 4). */
export interface CutPlan {
  /** Tail messages (from the oldest) whose leaves are due: summarized ahead, they leave next. */
  due: number;
  /** Messages the cut would take if it happened now (the newest always stays). */
  leaving: number;
  leavingTokens: number;
  /** Estimated tokens of the whole tail now; the cut happens once it passes `settings.tail[1]`. */
  tokens: number;
}

/** A thread page: the snapshot, what the next cut and merge will do, the tail's size. */
export interface ThreadBody {
  snapshot: OutlineSnapshot;
  settings: Settings;
  nextMerge: NextMerge | null;
  /** Messages whole: the snapshot's tail and those stored after it. */
  tail: { first: number; count: number; newer: number; cut: CutPlan; note?: string };
}

/** A tail message as listed: its head and cost, not its whole text (zoom reads it whole). */
export interface TailMessage {
  position: number;
  id: string;
  seq: number;
  from: string;
  to?: string | undefined;
  role: string;
  at: string;
  tokens: number;
  chars: number;
  steps: number;
  preview: string;
}

export interface TailPage {
  first: number;
  count: number;
  offset: number;
  cut: CutPlan;
  messages: TailMessage[];
}

/** Server-sent events on /ui/api/threads/{thread}/events. */
export type LiveEvent =
  | { type: "snapshot"; revision: number; deleted: boolean }
  | { type: "actor"; transition: ActorTransition };

/** What the page needs to know once: the settings threads follow, and what is offered. */
export interface ExplorerConfig {
  settings: Settings;
  /** Whether GET /threads/{thread}/search is served (the page shows a search box). */
  search: boolean;
}
