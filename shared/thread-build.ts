// Building nodes: free ones at once, others asked of the summarizer (wanted); parents eagerly,
// once both children exist. Leaves become due as the tail grows past tail[0].
import { writable, writableObject } from "./draft.ts";
import type { NodeRef } from "./names.ts";
import { putNode, type BuiltNode } from "./nodes.ts";
import { freeLeafText, freeParentText } from "./render.ts";
import {
  findBuilt,
  tailEntry,
  type OutboxNode,
  type TailEntry,
  type ThreadState,
  type ThreadStats,
} from "./thread-state.ts";

/** The state's stats, to count in (copied once per transition). */
export function stats(s: ThreadState): ThreadStats {
  return (s.stats = writableObject(s.stats));
}

function want(s: ThreadState, ref: NodeRef): void {
  (s.wanted = writable(s.wanted)).push(ref);
  if (ref.level === 0) stats(s).leafJobs += 1;
  else stats(s).mergeJobs += 1;
}

/** Stores a built node and, once its sibling exists, builds or asks for their parent. */
export function store(s: ThreadState, node: BuiltNode, free?: OutboxNode): void {
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
    // Not published: a reader joins its children again (SPEC, "Decided since the first version").
    stats(s).freeMerges += 1;
    current = { level: parent.level, index: parent.index, text: free, until: right.until };
  }
}

export function makeDue(s: ThreadState, entry: TailEntry): void {
  const free = freeLeafText(entry.message, s.settings.line);
  if (free === undefined) {
    want(s, { level: 0, index: entry.position });
    return;
  }
  stats(s).freeLeaves += 1;
  const { position, seq, message } = entry;
  const leaf: BuiltNode = { level: 0, index: position, text: free, until: message.at };
  // Whole literals, not `{ ...leaf, message }`: a spread copy plus a property costs more
  // (job-view.ts).
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
export function advanceDue(s: ThreadState): void {
  const low = s.settings.tail[0];
  while (s.due < s.count && s.dueCost > low) {
    const entry = tailEntry(s, s.due) as TailEntry;
    s.dueCost -= entry.cost;
    s.due += 1;
    makeDue(s, entry);
  }
}
