import { nodeLast, nodeSize, type NodeRef } from "./names.ts";
import type { BuiltNode } from "./nodes.ts";
import { lineBytes } from "./render.ts";

/** An outline line: a built node and the bytes its rendering adds to the outline. */
export interface Line extends BuiltNode {
  bytes: number;
}

// Nodes are immutable, so each one's rendering is measured once.
const lines = new WeakMap<BuiltNode, Line>();

export function toLine(node: BuiltNode): Line {
  let line = lines.get(node);
  if (!line) {
    line =
      "bytes" in node && typeof node.bytes === "number"
        ? (node as Line)
        : { ...node, bytes: lineBytes(node, node.text) };
    lines.set(node, line);
  }
  return line;
}

/**
 * How overdue a pair is for merging: `(T − last) / 2^l`, where T is the boundary, `last` the
 * pair's last message and l the children's level. Old fine lines score high; fresh coarse ones low.
 */
export function dueScore(boundary: number, left: NodeRef): number {
  const last = nodeLast({ level: left.level + 1, index: left.index >> 1 });
  return (boundary - last) / nodeSize(left);
}

/** Lines j and j+1 are siblings: same level, j the left child (even index), j+1 its right. */
export function isSiblingPair(left: NodeRef, right: NodeRef): boolean {
  return left.level === right.level && left.index % 2 === 0 && right.index === left.index + 1;
}

/** Index of the left line of the most due sibling pair (ties to the oldest), or -1 if none. */
export function mostDuePair(lines: readonly NodeRef[], boundary: number): number {
  let best = -1;
  let bestScore = -Infinity;
  for (let j = 0; j + 1 < lines.length; j++) {
    const left = lines[j];
    const right = lines[j + 1];
    if (!left || !right || !isSiblingPair(left, right)) continue;
    const score = dueScore(boundary, left);
    if (score > bestScore) {
      best = j;
      bestScore = score;
    }
  }
  return best;
}

export interface BatchProgress {
  lines: Line[];
  bytes: number;
  /** Parents that entered the outline, in merge order. */
  merged: NodeRef[];
  /** The parent the batch needs and that is not built yet; absent when the batch finished. */
  waitingFor?: NodeRef;
}

/**
 * Runs a merge batch (SPEC §4 step 5) as far as the built parents allow: always the most due pair,
 * until the outline is at most `low` bytes or no sibling pair is left. Stops at the first parent
 * not built yet and says which; calling again once it is built continues the same batch.
 */
export function runBatch(
  lines: readonly Line[],
  bytes: number,
  boundary: number,
  low: number,
  parentOf: (level: number, index: number) => BuiltNode | undefined,
): BatchProgress {
  const out = lines.slice();
  const merged: NodeRef[] = [];
  let total = bytes;
  while (total > low) {
    const j = mostDuePair(out, boundary);
    if (j < 0) break;
    const left = out[j] as Line;
    const right = out[j + 1] as Line;
    const parentRef = { level: left.level + 1, index: left.index >> 1 };
    const parent = parentOf(parentRef.level, parentRef.index);
    if (!parent) return { lines: out, bytes: total, merged, waitingFor: parentRef };
    const line = toLine(parent);
    out.splice(j, 2, line);
    total += line.bytes - left.bytes - right.bytes;
    merged.push(parentRef);
  }
  return { lines: out, bytes: total, merged };
}
