import { nodeId, nodeLast, nodeSize, type NodeRef } from "./names.ts";
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
    // A node that already carries its bytes is its own line; any other gets a copy with them.
    line =
      "bytes" in node && typeof node.bytes === "number"
        ? (node as Line)
        : Object.assign({}, node, { bytes: lineBytes(node, node.text) });
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

/** A sibling pair that may merge: its left line's slot, score and first message. */
interface Candidate {
  slot: number;
  score: number;
  id: number;
}

/** The most due first; ties to the oldest (the smallest first message), as `mostDuePair`. */
const before = (a: Candidate, b: Candidate): boolean =>
  a.score > b.score || (a.score === b.score && a.id < b.id);

/** A binary heap of candidates, `before` first. */
class Candidates {
  private readonly items: Candidate[] = [];

  push(c: Candidate): void {
    const items = this.items;
    let i = items.push(c) - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (!before(c, items[up] as Candidate)) break;
      items[i] = items[up] as Candidate;
      i = up;
    }
    items[i] = c;
  }

  pop(): Candidate | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= items.length) break;
      const r = l + 1;
      const child =
        r < items.length && before(items[r] as Candidate, items[l] as Candidate) ? r : l;
      if (!before(items[child] as Candidate, last)) break;
      items[i] = items[child] as Candidate;
      i = child;
    }
    items[i] = last;
    return top;
  }
}

/**
 * Runs a merge batch (SPEC §4 step 5) as far as the built parents allow: always the most due pair,
 * until the outline is at most `low` bytes or no sibling pair is left. Stops at the first parent
 * not built yet and says which; calling again once it is built continues the same batch.
 *
 * The lines are a linked list and the sibling pairs a heap: a merge removes one pair and can only
 * make one new one (the parent with its neighbour), and no other pair's score changes, so each
 * merge costs O(log n) instead of a scan of the outline (`mostDuePair` gives the same choices).
 */
export function runBatch(
  lines: readonly Line[],
  bytes: number,
  boundary: number,
  low: number,
  parentOf: (level: number, index: number) => BuiltNode | undefined,
): BatchProgress {
  const merged: NodeRef[] = [];
  let total = bytes;
  if (total <= low || lines.length < 2) return { lines: lines.slice(), bytes: total, merged };
  // Slots: the given lines, then each parent as it enters. prev/next link the live ones.
  const slot: Line[] = lines.slice();
  const prev: number[] = [];
  const next: number[] = [];
  for (let i = 0; i < slot.length; i++) {
    prev.push(i - 1);
    next.push(i + 1 < slot.length ? i + 1 : -1);
  }
  let head = 0;
  const pairs = new Candidates();
  const offer = (left: number, right: number): void => {
    const l = slot[left] as Line;
    if (isSiblingPair(l, slot[right] as Line)) {
      pairs.push({ slot: left, score: dueScore(boundary, l), id: nodeId(l) });
    }
  };
  for (let i = 0; i + 1 < slot.length; i++) offer(i, i + 1);
  const collect = (): Line[] => {
    const out: Line[] = [];
    for (let i = head; i >= 0; i = next[i] as number) out.push(slot[i] as Line);
    return out;
  };
  while (total > low) {
    const pair = pairs.pop();
    if (!pair) break;
    const j = pair.slot;
    const r = next[j] as number;
    const left = slot[j] as Line;
    const right = slot[r] as Line;
    const parentRef = { level: left.level + 1, index: left.index >> 1 };
    const parent = parentOf(parentRef.level, parentRef.index);
    if (!parent) return { lines: collect(), bytes: total, merged, waitingFor: parentRef };
    const line = toLine(parent);
    const p = slot.push(line) - 1;
    const pred = prev[j] as number;
    const succ = next[r] as number;
    prev.push(pred);
    next.push(succ);
    if (pred >= 0) next[pred] = p;
    else head = p;
    if (succ >= 0) prev[succ] = p;
    total += line.bytes - left.bytes - right.bytes;
    merged.push(parentRef);
    if (parentRef.index % 2 === 0) {
      if (succ >= 0) offer(p, succ);
    } else if (pred >= 0) offer(pred, p);
  }
  return { lines: collect(), bytes: total, merged };
}
