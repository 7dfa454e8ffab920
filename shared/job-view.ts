import { runBatch, toLine, type Line } from "./batch.ts";
import type { ContextLine, SummaryJob } from "./jobs.ts";
import { nodeId, nodeLast, nodeSize, type NodeRef } from "./names.ts";
import { getNode, type BuiltNode } from "./nodes.ts";
import { findBuilt, tailEntry, type ThreadState } from "./thread.ts";
import { InvariantError } from "./errors.ts";

/** The summarizer's view of what came before a node is kept between these sizes (bytes). */
export const CONTEXT_BYTES: [number, number] = [16_000, 32_000];

/** Merges lines down on the sawtooth (most due pairs with built parents), then drops the oldest. */
function fit(
  state: ThreadState,
  lines: Line[],
  bytes: number,
  boundary: number,
  sizes: [number, number],
): Line[] {
  if (bytes <= sizes[1]) return lines;
  const merged = runBatch(lines, bytes, boundary, sizes[0], (level, index) =>
    getNode(state.nodes, level, index),
  );
  let total = merged.bytes;
  let drop = 0;
  while (total > sizes[1] && drop < merged.lines.length)
    total -= (merged.lines[drop++] as Line).bytes;
  return drop === 0 ? merged.lines : merged.lines.slice(drop);
}

// Between cuts every job of a thread sees the same outline part, so it is merged once per outline
// (the outline array is replaced at each cut): summarizer calls then share a cached prefix. Its
// context lines and the bytes before each line are kept with it.
interface OutlinePart {
  lines: Line[];
  context: ContextLine[];
  /** before[i]: the bytes of lines [0, i). */
  before: number[];
}

const outlineParts = new WeakMap<readonly Line[], OutlinePart>();

function mergedOutline(state: ThreadState, sizes: [number, number]): OutlinePart {
  const cached = outlineParts.get(state.outline);
  if (cached) return cached;
  const lines = fit(state, state.outline, state.outlineBytes, state.boundary, sizes);
  const before = [0];
  for (const line of lines) before.push((before[before.length - 1] as number) + line.bytes);
  const part = { lines, context: lines.map(contextLine), before };
  outlineParts.set(state.outline, part);
  return part;
}

/**
 * How many of the merged outline's lines come before a node starting at `start`: all of them for
 * a node in the tail; for a parent built eagerly inside the outline, those that end before it (a
 * binary search: the lines are in order and do not overlap).
 */
function linesBefore(state: ThreadState, lines: readonly Line[], start: number): number {
  if (start >= state.boundary) return lines.length;
  let lo = 0;
  let hi = lines.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (nodeLast(lines[mid] as Line) < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The tail's built leaves in [from, to), each run covered by its largest built ancestor: the
 * cover only changes near its end as leaves and eager parents are built, so consecutive calls
 * share a long prefix (the provider's cache reads it).
 */
function tailCover(state: ThreadState, from: number, to: number): Line[] {
  const lines: Line[] = [];
  let p = from;
  while (p < to) {
    let best: BuiltNode | undefined;
    let size = 1;
    for (let level = 0, n = 1; p % n === 0 && p + n <= to; level++, n *= 2) {
      const node = getNode(state.nodes, level, p / n);
      if (node) {
        best = node;
        size = n;
      } else if (level === 0) break;
    }
    if (best) {
      lines.push(toLine(best));
      p += size;
    } else p += 1;
  }
  return lines;
}

/**
 * Lines before a node, oldest first, ending where the node starts (never anything newer): the
 * outline's lines, merged further on the same sawtooth to CONTEXT_BYTES, then the tail's built
 * leaves before the node under their largest built ancestors. If still too big, the oldest go.
 */
export function contextBefore(
  state: ThreadState,
  node: NodeRef,
  sizes = CONTEXT_BYTES,
): ContextLine[] {
  const start = nodeId(node);
  const part = mergedOutline(state, sizes);
  const end = linesBefore(state, part.lines, start);
  const tail = tailCover(state, state.boundary, start);
  let tailBytes = 0;
  for (const line of tail) tailBytes += line.bytes;
  // The oldest go while the context is too big: outline lines first, then tail lines.
  const outlineBytes = part.before[end] as number;
  let drop = 0;
  while (drop < end && outlineBytes - (part.before[drop] as number) + tailBytes > sizes[1]) drop++;
  let bytes = outlineBytes - (part.before[drop] as number) + tailBytes;
  let tailDrop = 0;
  while (bytes > sizes[1] && tailDrop < tail.length) bytes -= (tail[tailDrop++] as Line).bytes;
  const out = part.context.slice(drop, end);
  for (let i = tailDrop; i < tail.length; i++) out.push(contextLine(tail[i] as Line));
  return out;
}

// A line's context form, made once per line (lines are immutable; jobs only read their context).
const contextLines = new WeakMap<Line, ContextLine>();

function contextLine(line: Line): ContextLine {
  let known = contextLines.get(line);
  if (!known) {
    known = { id: nodeId(line), n: nodeSize(line), text: line.text };
    contextLines.set(line, known);
  }
  return known;
}

/** What the summarizer needs to build one node the thread asked for. */
export function jobFor(state: ThreadState, ref: NodeRef): SummaryJob {
  const job = jobWithoutView(state, ref) as SummaryJob;
  job.context = contextBefore(state, ref);
  return job;
}

/** Where a lazy job's view is worked out from, and the view once it is. */
interface View {
  state: ThreadState;
  ref: NodeRef;
  context?: ContextLine[];
}

const VIEW = Symbol("view");

// One getter for every lazy job, its state and ref in a hidden property of the job: a getter made
// per job (a closure) would give each job a hidden class of its own, and garbage.
const LAZY_CONTEXT: PropertyDescriptor = {
  enumerable: true,
  get(this: { [VIEW]: View }): ContextLine[] {
    const view = this[VIEW];
    return (view.context ??= contextBefore(view.state, view.ref));
  },
};

/**
 * `jobFor` for a job handed to the host (the machine's requestSummary effect), its view worked
 * out when first read: a group's call reads only its first node's view (`SummaryGroup.context`),
 * and the offline summarizers read none, so building every member's view (the lines before it)
 * would be work done for nothing (three quarters of the views' CPU in bench scale). Only for a
 * settled state: the core copies on write, so the state a job keeps never changes; a state
 * inside a transition (a NodeTexts callback's) does.
 */
export function lazyJobFor(state: ThreadState, ref: NodeRef): SummaryJob {
  const job = jobWithoutView(state, ref);
  Object.defineProperty(job, VIEW, { value: { state, ref } satisfies View });
  return Object.defineProperty(job, "context", LAZY_CONTEXT) as SummaryJob;
}

type WithoutView<T> = T extends unknown ? Omit<T, "context"> : never;

// Jobs are whole literals, not `{ ...base, kind, … }`: a literal is one allocation of a fixed
// shape, where a spread copy plus properties costs V8 about twice that, twice per leaf job.
function jobWithoutView(state: ThreadState, ref: NodeRef): WithoutView<SummaryJob> {
  const { thread } = state;
  const name = `${nodeId(ref)}+${nodeSize(ref)}`;
  const line = state.settings.line;
  if (ref.level === 0) {
    const entry = tailEntry(state, ref.index);
    if (!entry)
      throw new InvariantError(
        "LEAF_NOT_IN_TAIL",
        `leaf ${ref.index} of '${thread}' is not in the tail`,
      );
    return {
      thread,
      index: ref.index,
      name,
      line,
      kind: "leaf",
      level: 0,
      // The message's own fields, then its position (as `{ ...message, position }`).
      message: Object.assign({}, entry.message, { position: entry.position }),
      seq: entry.seq,
    };
  }
  const leftRef = { level: ref.level - 1, index: ref.index * 2 };
  const rightRef = { level: ref.level - 1, index: ref.index * 2 + 1 };
  const left = findBuilt(state, leftRef);
  const right = findBuilt(state, rightRef);
  if (!left || !right) {
    throw new InvariantError("CHILD_MISSING", `merge ${name} of '${thread}' lacks a built child`);
  }
  return {
    thread,
    index: ref.index,
    name,
    line,
    kind: "merge",
    level: ref.level,
    left: { id: nodeId(left), n: nodeSize(left), text: left.text },
    right: { id: nodeId(right), n: nodeSize(right), text: right.text },
    first: nodeId(ref),
    last: nodeLast(ref),
  };
}
