// Cuts: planned when the tail passes tail[1], applied (with the outline's merge batch when it
// passes outline[1]) once every leaving leaf, and every parent the batch needs, is built.
import { runBatch, toLine, type BatchProgress, type Line } from "./batch.ts";
import { claim, writable } from "./draft.ts";
import type { NodeRef } from "./names.ts";
import { dropNodes, getNode, type BuiltNode } from "./nodes.ts";
import { makeDue, stats } from "./thread-build.ts";
import { tailEntry, type PendingCut, type TailEntry, type ThreadState } from "./thread-state.ts";
import { handOverIds } from "./thread-tail-ids.ts";

/** Plans a cut when the tail passes tail[1]: the oldest leave until it is at most tail[0]. */
export function planCut(s: ThreadState): void {
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
export function settle(s: ThreadState): void {
  for (;;) {
    // Waiting for a merge parent: nothing can change until it is built (saves re-running the batch).
    const needed = s.batch?.waitingFor;
    if (needed && !getNode(s.nodes, needed.level, needed.index)) return;
    const cut = s.cuts[0];
    if (!cut || !leavesBuilt(s, s.boundary, cut.boundary) || !tryCut(s, cut)) return;
  }
}
