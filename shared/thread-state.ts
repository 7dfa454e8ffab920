// What a thread actor knows (`ThreadState`), its first value, and the look-ups every part of the
// fold uses: where a built node is kept, which tail entry holds a position.
import type { Line } from "./batch.ts";
import type { Message } from "./events.ts";
import { nodeId, nodeLast, type NodeRef } from "./names.ts";
import { getNode, type BuiltNode, type NodeStore } from "./nodes.ts";
import { threadSettingsOf, type CoreSettings, type ThreadSettings } from "./settings.ts";

/** A message still whole, with its place in the thread and in the stream. */
export interface TailEntry {
  message: Message;
  position: number;
  /** Stream sequence it was stored at (0 when not from a stream). */
  seq: number;
  /** Estimated prompt tokens. */
  cost: number;
}

/** A cut decided by the log, applied once every leaving leaf is built. */
export interface PendingCut {
  boundary: number;
  since: string;
  cutAt: string;
}

export interface ThreadStats {
  /** Summaries asked of the model. */
  leafJobs: number;
  mergeJobs: number;
  /** Nodes that were their own line (no model call). */
  freeLeaves: number;
  freeMerges: number;
  cuts: number;
  batches: number;
  merges: number;
}

/**
 * Everything a thread actor knows. JSON-safe (persisted as is), and a pure function of the
 * message log and the built summaries' texts once no job is outstanding.
 */
export interface ThreadState {
  thread: string;
  settings: CoreSettings;
  complete: boolean;
  deleted: boolean;
  /** Messages appended. */
  count: number;
  /** Highest stream sequence applied. */
  seq: number;
  /** The outline covers [0, boundary). */
  boundary: number;
  since: string | null;
  cutAt: string | null;
  outline: Line[];
  outlineBytes: number;
  /** Messages [boundary, count), whole. */
  tail: TailEntry[];
  /** Boundary after every planned cut, and the cost of [planned, count). */
  planned: number;
  plannedCost: number;
  /** Leaves [0, due) are due (certain to leave); `dueCost` is the cost of [due, count). */
  due: number;
  dueCost: number;
  cuts: PendingCut[];
  /** The next cut's merge batch waits for this parent (not built yet); null when not waiting. */
  batch: { waitingFor: NodeRef } | null;
  /** Built nodes not in the outline: tail leaves built ahead, parents built eagerly. */
  nodes: NodeStore;
  /** Nodes to summarise, in request order; and those handed to the summarizer. */
  wanted: NodeRef[];
  inflight: NodeRef[];
  /**
   * Free leaves (no model call) that the host has not published to HISTORY yet: a leaf names
   * where its message is stored. Free parents are never published (their children, joined, are
   * the text); model-built nodes are published before the host reports them.
   */
  outbox: OutboxNode[];
  stats: ThreadStats;
}

/** A free leaf waiting to be published, naming its source message. */
export interface OutboxNode extends BuiltNode {
  message?: { id: string; seq: number };
}

const emptyStats = (): ThreadStats => ({
  leafJobs: 0,
  mergeJobs: 0,
  freeLeaves: 0,
  freeMerges: 0,
  cuts: 0,
  batches: 0,
  merges: 0,
});

export function initialThreadState(
  thread: string,
  settings: CoreSettings,
  complete = true,
): ThreadState {
  return {
    thread,
    settings: { ...settings, tail: [...settings.tail], outline: [...settings.outline] },
    complete,
    deleted: false,
    count: 0,
    seq: 0,
    boundary: 0,
    since: null,
    cutAt: null,
    outline: [],
    outlineBytes: 0,
    tail: [],
    planned: 0,
    plannedCost: 0,
    due: 0,
    dueCost: 0,
    cuts: [],
    batch: null,
    nodes: [],
    wanted: [],
    inflight: [],
    outbox: [],
    stats: emptyStats(),
  };
}

/**
 * The thread runs under other line, tail and outline settings from now on: the next message
 * appends, makes due, plans a cut and merges by them (a smaller tail cuts at the next message, a
 * smaller outline merges at the next cut). What was built stays as built.
 */
export function withSettings(state: ThreadState, settings: ThreadSettings): ThreadState {
  return { ...state, settings: { ...state.settings, ...threadSettingsOf(settings) } };
}

export const sameRef = (a: NodeRef, b: NodeRef): boolean =>
  a.level === b.level && a.index === b.index;

/** Index of the outline line covering message `position`, or -1. Outline lines are sorted. */
export function outlineIndexOf(outline: readonly NodeRef[], position: number): number {
  let lo = 0;
  let hi = outline.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const line = outline[mid] as NodeRef;
    if (position < nodeId(line)) hi = mid - 1;
    else if (position > nodeLast(line)) lo = mid + 1;
    else return mid;
  }
  return -1;
}

/** A built node's text and time, wherever it is kept now: the node store or the outline. */
export function findBuilt(state: ThreadState, ref: NodeRef): BuiltNode | undefined {
  const stored = getNode(state.nodes, ref.level, ref.index);
  if (stored) return stored;
  const id = nodeId(ref);
  // The outline covers [0, boundary): a node starting later is not in it (no search).
  if (id >= state.boundary) return undefined;
  const line = state.outline[outlineIndexOf(state.outline, id)];
  return line && sameRef(line, ref) ? line : undefined;
}

export function tailEntry(state: ThreadState, position: number): TailEntry | undefined {
  return state.tail[position - state.boundary];
}
