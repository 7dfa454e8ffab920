import { runBatch, toLine, type Line } from "./batch.ts";
import type { ContextLine, SummaryJob } from "./jobs.ts";
import { nodeId, nodeLast, nodeSize, type NodeRef } from "./names.ts";
import { getNode } from "./nodes.ts";
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
// (the outline array is replaced at each cut): summarizer calls then share a cached prefix.
const outlineParts = new WeakMap<readonly Line[], Line[]>();

function outlinePart(state: ThreadState, start: number, sizes: [number, number]): Line[] {
  if (start >= state.boundary) {
    const cached = outlineParts.get(state.outline);
    if (cached) return cached;
    const part = fit(state, state.outline, state.outlineBytes, state.boundary, sizes);
    outlineParts.set(state.outline, part);
    return part;
  }
  // A parent built eagerly inside the outline: the merged outline's lines that end before it.
  const part = outlinePart(state, state.boundary, sizes);
  let end = 0;
  while (end < part.length && nodeLast(part[end] as Line) < start) end++;
  return part.slice(0, end);
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
    let best: Line | undefined;
    for (let level = 0; p % 2 ** level === 0 && p + 2 ** level <= to; level++) {
      const node = getNode(state.nodes, level, p / 2 ** level);
      if (node) best = toLine(node);
      else if (level === 0) break;
    }
    if (best) {
      lines.push(best);
      p += nodeSize(best);
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
  const lines = [...outlinePart(state, start, sizes), ...tailCover(state, state.boundary, start)];
  let bytes = 0;
  for (const line of lines) bytes += line.bytes;
  let drop = 0;
  while (bytes > sizes[1] && drop < lines.length) bytes -= (lines[drop++] as Line).bytes;
  return lines
    .slice(drop)
    .map((line) => ({ id: nodeId(line), n: nodeSize(line), text: line.text }));
}

/** What the summarizer needs to build one node the thread asked for. */
export function jobFor(state: ThreadState, ref: NodeRef): SummaryJob {
  const base = {
    thread: state.thread,
    index: ref.index,
    name: `${nodeId(ref)}+${nodeSize(ref)}`,
    line: state.settings.line,
    context: contextBefore(state, ref),
  };
  if (ref.level === 0) {
    const entry = tailEntry(state, ref.index);
    if (!entry)
      throw new InvariantError(
        "LEAF_NOT_IN_TAIL",
        `leaf ${ref.index} of '${state.thread}' is not in the tail`,
      );
    return {
      ...base,
      kind: "leaf",
      level: 0,
      message: { ...entry.message, position: entry.position },
      seq: entry.seq,
    };
  }
  const leftRef = { level: ref.level - 1, index: ref.index * 2 };
  const rightRef = { level: ref.level - 1, index: ref.index * 2 + 1 };
  const left = findBuilt(state, leftRef);
  const right = findBuilt(state, rightRef);
  if (!left || !right) {
    throw new InvariantError(
      "CHILD_MISSING",
      `merge ${base.name} of '${state.thread}' lacks a built child`,
    );
  }
  return {
    ...base,
    kind: "merge",
    level: ref.level,
    left: { id: nodeId(left), n: nodeSize(left), text: left.text },
    right: { id: nodeId(right), n: nodeSize(right), text: right.text },
    first: nodeId(ref),
    last: nodeLast(ref),
  };
}
