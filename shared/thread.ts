import { runBatch, toLine, type BatchProgress, type Line } from "./batch.ts";
import { cutToBytes, utf8Bytes } from "./bytes.ts";
import { beginDraft, claim, endDraft, writable, writableObject } from "./draft.ts";
import { InvariantError } from "./errors.ts";
import type { Message } from "./events.ts";
import { nodeId, nodeLast, type NodeRef } from "./names.ts";
import { dropNodes, getNode, putNode, type BuiltNode, type NodeStore } from "./nodes.ts";
import { freeLeafText, freeParentText } from "./render.ts";
import { threadSettingsOf, type CoreSettings, type ThreadSettings } from "./settings.ts";
import { estimateMessageTokens } from "./tokens.ts";

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
   * Nodes built free (no model call) that the host has not published to HISTORY yet. Model-built
   * nodes are published by the host before it reports them, so they never appear here.
   */
  outbox: OutboxNode[];
  stats: ThreadStats;
}

/** A free node waiting to be published; a leaf names its source message. */
export interface OutboxNode extends BuiltNode {
  message?: { id: string; seq: number };
}

export type AppendOutcome =
  | { type: "applied"; position: number }
  /** `firstSeq`: the id index names an earlier copy (the host may compare the two). */
  | { type: "duplicate"; reason: string; firstSeq?: number }
  | { type: "rejected"; reason: string };

export type BuiltOutcome = { type: "built" } | { type: "ignored"; reason: string };

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

const sameRef = (a: NodeRef, b: NodeRef): boolean => a.level === b.level && a.index === b.index;

/** Index of the outline line covering message `position`, or -1. Outline lines are sorted. */
export function outlineIndexOf(outline: readonly Line[], position: number): number {
  let lo = 0;
  let hi = outline.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const line = outline[mid] as Line;
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

// ---------------------------------------------------------------------------------------------
// Message ids of the tail, for the duplicate check without a scan of the tail per message.
//
// A tail array is never modified; each transition that appends or cuts makes a new one. The
// index of ids follows that line of states: a transition hands it from the old array to the new
// one and updates it. An array whose index was handed on (an older state used again: a retry, a
// test) gets a new index built from its entries on its first check. The cache is invisible: the
// answers are those of a scan of the tail.

interface TailIds {
  /** The only tail array this index describes now. */
  owner: readonly TailEntry[];
  /** Message id → position, for every entry of `owner` (and none other). */
  ids: Map<string, number>;
}

const tailIds = new WeakMap<readonly TailEntry[], TailIds>();

function idsOf(tail: readonly TailEntry[]): TailIds {
  const known = tailIds.get(tail);
  if (known && known.owner === tail) return known;
  const ids = new Map<string, number>();
  for (const entry of tail) ids.set(entry.message.id, entry.position);
  const index = { owner: tail, ids };
  tailIds.set(tail, index);
  return index;
}

/** The tail entry holding message `id`, if any. */
function findInTail(tail: readonly TailEntry[], id: string): TailEntry | undefined {
  const position = idsOf(tail).ids.get(id);
  if (position === undefined) return undefined;
  const first = tail[0];
  return first ? tail[position - first.position] : undefined;
}

/** `next` is `tail` plus `added` at its end, less its first `removed` entries. */
function handOverIds(
  tail: readonly TailEntry[],
  next: readonly TailEntry[],
  added: TailEntry | undefined,
  removed: number,
): void {
  const index = idsOf(tail);
  for (let i = 0; i < removed; i++) {
    const entry = tail[i] as TailEntry;
    if (index.ids.get(entry.message.id) === entry.position) index.ids.delete(entry.message.id);
  }
  if (added) index.ids.set(added.message.id, added.position);
  index.owner = next;
  if (next !== tail) tailIds.set(next, index);
}

// ---------------------------------------------------------------------------------------------
// Building nodes: free ones at once, others asked of the summarizer; parents eagerly.

/** The state's stats, to count in (copied once per transition). */
function stats(s: ThreadState): ThreadStats {
  return (s.stats = writableObject(s.stats));
}

function want(s: ThreadState, ref: NodeRef): void {
  (s.wanted = writable(s.wanted)).push(ref);
  if (ref.level === 0) stats(s).leafJobs += 1;
  else stats(s).mergeJobs += 1;
}

/** Stores a built node and, once its sibling exists, builds or asks for their parent. */
function store(s: ThreadState, node: BuiltNode, free?: OutboxNode): void {
  if (free) (s.outbox = writable(s.outbox)).push(free);
  let current: BuiltNode | undefined = node;
  while (current) {
    s.nodes = putNode(s.nodes, current);
    const sibling = findBuilt(s, { level: current.level, index: current.index ^ 1 });
    if (!sibling) return;
    const [left, right]: [BuiltNode, BuiltNode] =
      current.index % 2 === 0 ? [current, sibling] : [sibling, current];
    const parent: NodeRef = { level: current.level + 1, index: current.index >> 1 };
    const free = freeParentText(left.text, right.text, s.settings.line);
    if (free === undefined) {
      want(s, parent);
      return;
    }
    stats(s).freeMerges += 1;
    current = { level: parent.level, index: parent.index, text: free, until: right.until };
    (s.outbox = writable(s.outbox)).push(current);
  }
}

function makeDue(s: ThreadState, entry: TailEntry): void {
  const free = freeLeafText(entry.message, s.settings.line);
  if (free === undefined) {
    want(s, { level: 0, index: entry.position });
    return;
  }
  stats(s).freeLeaves += 1;
  const { position, seq, message } = entry;
  const leaf: BuiltNode = { level: 0, index: position, text: free, until: message.at };
  // Whole literals, not `{ ...leaf, message }` (a property added to a spread copy is slow, batch.ts).
  const published = {
    level: 0,
    index: position,
    text: free,
    until: message.at,
    message: { id: message.id, seq },
  };
  store(s, leaf, published);
}

/** Summarise ahead: a leaf is due once the tail from it to the end costs more than tail[0]. */
function advanceDue(s: ThreadState): void {
  const low = s.settings.tail[0];
  while (s.due < s.count && s.dueCost > low) {
    const entry = tailEntry(s, s.due) as TailEntry;
    s.dueCost -= entry.cost;
    s.due += 1;
    makeDue(s, entry);
  }
}

/** Plans a cut when the tail passes tail[1]: the oldest leave until it is at most tail[0]. */
function planCut(s: ThreadState): void {
  const [low, high] = s.settings.tail;
  if (s.plannedCost <= high) return;
  let b = s.planned;
  let cost = s.plannedCost;
  // The newest message always stays whole, however big.
  while (cost > low && b < s.count - 1) {
    cost -= (tailEntry(s, b) as TailEntry).cost;
    b += 1;
  }
  if (b === s.planned) return;
  while (s.due < b) {
    const entry = tailEntry(s, s.due) as TailEntry;
    s.dueCost -= entry.cost;
    s.due += 1;
    makeDue(s, entry);
  }
  const first = tailEntry(s, b) as TailEntry;
  const newest = tailEntry(s, s.count - 1) as TailEntry;
  s.planned = b;
  s.plannedCost = cost;
  (s.cuts = writable(s.cuts)).push({
    boundary: b,
    since: first.message.at,
    cutAt: newest.message.at,
  });
}

// ---------------------------------------------------------------------------------------------
// Applying what the log decided, as far as the built nodes allow.

function leavesBuilt(s: ThreadState, from: number, to: number): boolean {
  for (let p = from; p < to; p++) if (!getNode(s.nodes, 0, p)) return false;
  return true;
}

/**
 * Where a waiting merge batch stopped, by the `batch` object of the states that wait: the lines,
 * bytes and merges so far. The batch always merges the most due pair, whichever parents are
 * built, so going on from there is what running it again from its start would do; only the
 * parents built meanwhile differ. Each stop makes a new `batch` object, so a state never goes on
 * from a stop one of its successors reached. A state restored from JSON has none and runs the
 * batch from its start.
 */
const waited = new WeakMap<NonNullable<ThreadState["batch"]>, BatchProgress>();

/**
 * Applies the next cut and, when the outline then passes outline[1], its merge batch, as one
 * step: the outline changes only at cuts, so prompts between cuts grow only at their end. When
 * the batch needs a parent not built yet, nothing is applied and the thread waits for it.
 */
function tryCut(s: ThreadState, cut: PendingCut): boolean {
  const leaving: NodeRef[] = [];
  for (let p = s.boundary; p < cut.boundary; p++) leaving.push({ level: 0, index: p });
  // A batch that waited goes on from where it stopped (see `waited`), not from its start.
  const resumed = s.batch ? waited.get(s.batch) : undefined;
  let lines: Line[];
  let bytes: number;
  let merged: NodeRef[] = resumed?.merged ?? [];
  if (resumed) {
    lines = resumed.lines;
    bytes = resumed.bytes;
  } else {
    lines = s.outline.slice();
    bytes = s.outlineBytes;
    for (let p = s.boundary; p < cut.boundary; p++) {
      const line = toLine(getNode(s.nodes, 0, p) as BuiltNode);
      lines.push(line);
      bytes += line.bytes;
    }
  }
  const batched = resumed !== undefined || bytes > s.settings.outline[1];
  if (batched) {
    const progress = runBatch(lines, bytes, cut.boundary, s.settings.outline[0], (level, index) =>
      getNode(s.nodes, level, index),
    );
    merged = merged.length === 0 ? progress.merged : [...merged, ...progress.merged];
    if (progress.waitingFor) {
      s.batch = { waitingFor: progress.waitingFor };
      waited.set(s.batch, { lines: progress.lines, bytes: progress.bytes, merged });
      return false;
    }
    lines = progress.lines;
    bytes = progress.bytes;
  }
  s.batch = null;
  s.outline = lines;
  s.outlineBytes = bytes;
  s.nodes = dropNodes(s.nodes, [...leaving, ...merged]);
  const tail = claim(s.tail.slice(cut.boundary - s.boundary));
  handOverIds(s.tail, tail, undefined, cut.boundary - s.boundary);
  s.tail = tail;
  s.boundary = cut.boundary;
  s.since = cut.since;
  s.cutAt = cut.cutAt;
  s.cuts = s.cuts.slice(1);
  const counts = stats(s);
  counts.cuts += 1;
  if (batched) counts.batches += 1;
  counts.merges += merged.length;
  return true;
}

/** Applies pending cuts in log order until one must wait for a summary. */
function settle(s: ThreadState): void {
  for (;;) {
    // Waiting for a merge parent: nothing can change until it is built (saves re-running the batch).
    const needed = s.batch?.waitingFor;
    if (needed && !getNode(s.nodes, needed.level, needed.index)) return;
    const cut = s.cuts[0];
    if (!cut || !leavesBuilt(s, s.boundary, cut.boundary) || !tryCut(s, cut)) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Transitions. Each takes a state and returns a new one; the input is never modified.

/** SPEC §4 on `message.created`: append, summarise ahead, plan a cut, apply what can be. */
export function appendMessage(
  state: ThreadState,
  message: Message,
  seq = 0,
  firstSeq?: number,
): { state: ThreadState; outcome: AppendOutcome } {
  const refused = refusal(state, message, seq, firstSeq);
  if (refused) return { state, outcome: refused };
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    return { state: s, outcome: { type: "applied", position: appendInto(s, message, seq) } };
  } finally {
    endDraft(outer);
  }
}

/**
 * Why a message is not applied (a deleted thread, a sequence or id seen), or undefined. An id is
 * seen when the tail holds it or when the id index (`firstSeq`, shared/message-ids.ts) names an
 * earlier sequence for it: the tail alone forgets ids once they leave it.
 */
function refusal(
  state: ThreadState,
  message: Message,
  seq: number,
  firstSeq: number | undefined,
): AppendOutcome | undefined {
  if (message.thread !== state.thread) {
    throw new InvariantError(
      "WRONG_THREAD",
      `message ${message.id} is for thread '${message.thread}', not '${state.thread}'`,
    );
  }
  if (state.deleted) {
    return {
      type: "rejected",
      reason: `thread '${state.thread}' was deleted; a deleted thread takes no new messages`,
    };
  }
  if (seq > 0 && seq <= state.seq) {
    return {
      type: "duplicate",
      reason: `stream sequence ${seq} was already applied (last ${state.seq})`,
    };
  }
  if (firstSeq !== undefined && firstSeq !== seq) {
    return {
      type: "duplicate",
      reason: `message id '${message.id}' was first stored at stream sequence ${firstSeq}`,
      firstSeq,
    };
  }
  const already = findInTail(state.tail, message.id);
  if (already) {
    return {
      type: "duplicate",
      reason: `message id '${message.id}' was already applied at position ${already.position}`,
    };
  }
  return undefined;
}

/** Appends a message the thread takes; returns its position. */
function appendInto(s: ThreadState, message: Message, seq: number): number {
  const position = s.count;
  const cost = estimateMessageTokens(message);
  const entry: TailEntry = { message, position, seq, cost };
  const before = s.tail;
  const tail = writable(before);
  tail.push(entry);
  handOverIds(before, tail, entry, 0);
  s.tail = tail;
  s.count += 1;
  if (seq > 0) s.seq = seq;
  s.plannedCost += cost;
  s.dueCost += cost;
  advanceDue(s);
  planCut(s);
  settle(s);
  return position;
}

/** A summary came back for a node the thread asked for. Others (already built, unknown) are ignored. */
export function summaryBuilt(
  state: ThreadState,
  ref: NodeRef,
  text: string,
): { state: ThreadState; outcome: BuiltOutcome } {
  if (state.deleted) return { state, outcome: { type: "ignored", reason: "thread deleted" } };
  const awaited = awaitedAt(state, ref);
  if (!awaited) {
    return {
      state,
      outcome: {
        type: "ignored",
        reason: `node ${ref.level}:${ref.index} is not awaited (already built or never asked for)`,
      },
    };
  }
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    if (awaited.list === "inflight")
      s.inflight = claim(s.inflight.filter((_, i) => i !== awaited.at));
    else s.wanted = claim(s.wanted.filter((_, i) => i !== awaited.at));
    applyBuilt(s, ref, text);
    return { state: s, outcome: { type: "built" } };
  } finally {
    endDraft(outer);
  }
}

/**
 * Several summaries that came back together: the same as `summaryBuilt` for each in order (those
 * not awaited are ignored), in one transition, so the state and its lists are copied once for
 * all of them, not once per node.
 */
export function summariesBuilt(
  state: ThreadState,
  nodes: readonly (NodeRef & { text: string })[],
): ThreadState {
  if (state.deleted || nodes.length === 0) return state;
  const outer = beginDraft();
  try {
    let s: ThreadState | undefined;
    for (const node of nodes) {
      const awaited = awaitedAt(s ?? state, node);
      if (!awaited) continue;
      s ??= { ...state };
      (s[awaited.list] = writable(s[awaited.list])).splice(awaited.at, 1);
      applyBuilt(s, { level: node.level, index: node.index }, node.text);
    }
    return s ?? state;
  } finally {
    endDraft(outer);
  }
}

/** Where a node the thread awaits is listed: running (`inflight`) or queued (`wanted`). */
function awaitedAt(
  state: ThreadState,
  ref: NodeRef,
): { list: "inflight" | "wanted"; at: number } | undefined {
  const inflight = state.inflight.findIndex((r) => sameRef(r, ref));
  if (inflight >= 0) return { list: "inflight", at: inflight };
  const wanted = state.wanted.findIndex((r) => sameRef(r, ref));
  return wanted >= 0 ? { list: "wanted", at: wanted } : undefined;
}

/** Stores the summary of an awaited node (taken off the lists already) and applies what it allows. */
function applyBuilt(s: ThreadState, ref: NodeRef, text: string): void {
  if (text.trim() === "") {
    throw new InvariantError(
      "EMPTY_SUMMARY",
      `summary for node ${ref.level}:${ref.index} is empty; an empty reply is a summarizer failure, send summary.failed instead`,
    );
  }
  const limit = Math.floor(s.settings.line * 1.25);
  const bounded = utf8Bytes(text) > limit ? cutToBytes(text, limit) : text;
  let until: string;
  if (ref.level === 0) {
    const entry = tailEntry(s, ref.index);
    if (!entry)
      throw new InvariantError("LEAF_NOT_IN_TAIL", `leaf ${ref.index} is not in the tail`);
    until = entry.message.at;
  } else {
    const right = findBuilt(s, { level: ref.level - 1, index: ref.index * 2 + 1 });
    if (!right)
      throw new InvariantError(
        "CHILD_MISSING",
        `parent ${ref.level}:${ref.index} has no built right child`,
      );
    until = right.until;
  }
  store(s, { level: ref.level, index: ref.index, text: bounded, until });
  settle(s);
}

/**
 * Gives the text of a node the thread asks for, at once; `state` is the thread as it asks.
 * Undefined: no text for it (yet); the node stays wanted.
 */
export type NodeTexts = (ref: NodeRef, state: ThreadState) => string | undefined;

/**
 * Answers every job the thread asks for with `texts`, at once, until none is outstanding, and
 * empties the outbox. The same as `takeJobs` (all of them), `summaryBuilt` for each in that
 * order, again while new jobs come, then `outboxPublished` (all), in one transition: the lists
 * and the node store are copied once, not once per job. `texts` sees the state being built (to
 * make a job of it with `jobFor`) and must not keep it.
 */
export function answerWanted(state: ThreadState, texts: NodeTexts): ThreadState {
  if (state.wanted.length === 0) return outboxPublished(state, state.outbox.length);
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    answerInto(s, texts);
    return s;
  } finally {
    endDraft(outer);
  }
}

function answerInto(s: ThreadState, texts: NodeTexts): void {
  let missing: NodeRef[] | undefined;
  while (s.wanted.length > 0) {
    let started = s.wanted;
    const needed = s.batch?.waitingFor;
    if (needed) {
      const at = started.findIndex((r) => sameRef(r, needed));
      if (at > 0) started = [needed, ...started.slice(0, at), ...started.slice(at + 1)];
    }
    s.wanted = claim([]);
    for (const ref of started) {
      const text = texts(ref, s);
      if (text === undefined) (missing ??= []).push(ref);
      else applyBuilt(s, ref, text);
    }
  }
  // Nodes without a text stay wanted, in their order (a replay: never built, held for a group).
  if (missing) s.wanted = claim(missing);
  if (s.outbox.length > 0) s.outbox = claim([]);
}

/**
 * The wanted or in-flight nodes the first pending step waits for: the parent a merge batch needs,
 * else the leaves of the messages the first planned cut takes out. Empty when nothing waits.
 */
export function blockingNodes(state: ThreadState): NodeRef[] {
  const outstanding = [...state.inflight, ...state.wanted];
  const needed = state.batch?.waitingFor;
  if (needed) return outstanding.filter((r) => sameRef(r, needed));
  const cut = state.cuts[0];
  if (!cut) return [];
  return outstanding.filter(
    (r) => r.level === 0 && r.index >= state.boundary && r.index < cut.boundary,
  );
}

/** A message of the log and its stream sequence (0 when not from a stream). */
export interface LogEntry {
  message: Message;
  seq?: number;
  /** The id index names an earlier copy of the message's id. */
  firstSeq?: number;
}

/**
 * Applies messages in order, answering every job after each one with `texts`: the same as
 * `appendMessage` then `answerWanted` for each entry, in one transition, so what the messages
 * share (the tail, the node store, the lists) is copied once for all of them. A replay applies a
 * thread's messages of one stream read this way. Returns each entry's outcome.
 */
export function appendAll(
  state: ThreadState,
  entries: readonly LogEntry[],
  texts: NodeTexts,
): { state: ThreadState; outcomes: AppendOutcome[] } {
  if (entries.length === 0) return { state, outcomes: [] };
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    const outcomes: AppendOutcome[] = [];
    for (const { message, seq = 0, firstSeq } of entries) {
      const refused = refusal(s, message, seq, firstSeq);
      if (refused) outcomes.push(refused);
      else outcomes.push({ type: "applied", position: appendInto(s, message, seq) });
      answerInto(s, texts);
    }
    return { state: s, outcomes };
  } finally {
    endDraft(outer);
  }
}

/** A summarizer attempt failed: the node goes back to the front of the queue. */
export function summaryFailed(state: ThreadState, ref: NodeRef): ThreadState {
  const at = state.inflight.findIndex((r) => sameRef(r, ref));
  if (at < 0) return state;
  return {
    ...state,
    inflight: state.inflight.filter((_, i) => i !== at),
    wanted: [ref, ...state.wanted],
  };
}

/** Nodes per summarizer call (HISTORY_GROUP); 1 for threads stored before groups existed. */
export function groupSize(state: ThreadState): number {
  return Math.max(1, state.settings.group ?? 1);
}

/** A cut or a merge batch is waiting for nodes: every wanted node goes now, group full or not. */
function urgent(state: ThreadState): boolean {
  return state.cuts.length > 0 || state.batch !== null;
}

/**
 * Wanted nodes that wait for their group to fill: nothing needs them yet (no cut or batch is
 * waiting) and fewer than a group are wanted. A due leaf is certain to leave at the next cut,
 * which comes only after the tail grew by tail[1] − tail[0], so holding it costs no wait in a
 * live thread and lets one summarizer call build a whole group.
 */
export function heldBack(state: ThreadState): number {
  const group = groupSize(state);
  if (group <= 1 || urgent(state)) return 0;
  return state.wanted.length % group;
}

/**
 * Hands out jobs up to the concurrency limit (in nodes: `concurrency` calls of a group each):
 * the parent a waiting batch needs first, then in request order (due leaves in position order,
 * merges as their children complete). With groups, only whole groups go unless a cut or a batch
 * waits (`heldBack`); `hold: false` hands out held nodes too (a host that flushes on purpose).
 */
export function takeJobs(
  state: ThreadState,
  limit = state.settings.concurrency * groupSize(state),
  hold = true,
): { state: ThreadState; started: NodeRef[] } {
  const held = hold ? heldBack(state) : 0;
  const room = Math.min(limit - state.inflight.length, state.wanted.length - held);
  if (room <= 0) return { state, started: [] };
  let wanted = state.wanted;
  const needed = state.batch?.waitingFor;
  if (needed) {
    const at = wanted.findIndex((r) => sameRef(r, needed));
    if (at > 0) wanted = [needed, ...wanted.slice(0, at), ...wanted.slice(at + 1)];
  }
  const started = wanted.slice(0, room);
  return {
    state: { ...state, wanted: wanted.slice(room), inflight: [...state.inflight, ...started] },
    started,
  };
}

/** After a restore: jobs that were in flight are asked again (their answers were lost). */
export function restartJobs(state: ThreadState): ThreadState {
  if (state.inflight.length === 0) return state;
  return { ...state, wanted: [...state.inflight, ...state.wanted], inflight: [] };
}

/** The host published the first `count` outbox nodes to HISTORY. */
export function outboxPublished(state: ThreadState, count: number): ThreadState {
  if (count <= 0) return state;
  return { ...state, outbox: state.outbox.slice(count) };
}

/** SPEC §4 `thread.deleted`: nothing of the thread is kept; it takes no more messages. */
export function deleteThread(state: ThreadState): ThreadState {
  return {
    ...initialThreadState(state.thread, state.settings, state.complete),
    deleted: true,
    seq: state.seq,
  };
}

/** Nothing outstanding: every asked summary is in and every planned cut and batch applied. */
export function isSettled(state: ThreadState): boolean {
  return (
    state.wanted.length === 0 &&
    state.inflight.length === 0 &&
    state.cuts.length === 0 &&
    state.batch === null
  );
}

/**
 * Nothing to do until the next event: nothing in flight, no cut or batch waiting, and any wanted
 * nodes are held for their group (`heldBack`). A thread at rest needs no wake-up after a restart.
 */
export function isAtRest(state: ThreadState): boolean {
  return (
    state.inflight.length === 0 &&
    state.cuts.length === 0 &&
    state.batch === null &&
    state.wanted.length === heldBack(state)
  );
}
