import { claim, writable, writableObject } from "./draft.ts";
import { nodeKey, type NodeRef } from "./names.ts";

/** A built node of the summary tree. */
export interface BuiltNode extends NodeRef {
  text: string;
  /** `at` of the newest (last) message it covers. */
  until: string;
}

/** Built nodes of one level, kept as a dense window [base, base + items.length). */
export interface LevelStore {
  base: number;
  items: (BuiltNode | null)[];
}

/**
 * Built nodes not (yet) in the outline: tail leaves built ahead, and parents built eagerly.
 * Dense per-level windows rather than a keyed record, so a copy-on-write touches one short array.
 */
export type NodeStore = LevelStore[];

export function getNode(store: NodeStore, level: number, index: number): BuiltNode | undefined {
  const lvl = store[level];
  if (!lvl) return undefined;
  return lvl.items[index - lvl.base] ?? undefined;
}

/** Canonical form: no leading or trailing holes, an empty level has base 0. */
function trimmed(level: LevelStore): LevelStore {
  let start = 0;
  let end = level.items.length;
  while (start < end && level.items[start] === null) start++;
  while (end > start && level.items[end - 1] === null) end--;
  if (start === end) return { base: 0, items: [] };
  if (start === 0 && end === level.items.length) return level;
  return { base: level.base + start, items: level.items.slice(start, end) };
}

/**
 * Returns a new store with `node` added (or replaced). Inside a transition (`beginDraft`) the
 * arrays it already copied are changed in place.
 */
export function putNode(store: NodeStore, node: BuiltNode): NodeStore {
  const next = writable(store);
  while (next.length <= node.level) next.push(claim({ base: 0, items: claim([]) }));
  const lvl = next[node.level] as LevelStore;
  if (lvl.items.length === 0) {
    next[node.level] = claim({ base: node.index, items: claim([node]) });
  } else if (node.index < lvl.base) {
    const items = [node, ...new Array<null>(lvl.base - node.index - 1).fill(null), ...lvl.items];
    next[node.level] = claim({ base: node.index, items: claim(items) });
  } else {
    const level = writableObject(lvl);
    const items = (level.items = writable(level.items));
    const at = node.index - level.base;
    while (items.length < at) items.push(null);
    items[at] = node;
    next[node.level] = level;
  }
  return next;
}

/** Returns a new store without the given nodes (absent ones are ignored). */
export function dropNodes(store: NodeStore, refs: readonly NodeRef[]): NodeStore {
  if (refs.length === 0) return store;
  const next = store.slice();
  const touched = new Set<number>();
  for (const ref of refs) {
    const lvl = next[ref.level];
    if (!lvl) continue;
    const at = ref.index - lvl.base;
    if (at < 0 || at >= lvl.items.length || lvl.items[at] === null) continue;
    const items = touched.has(ref.level) ? lvl.items : lvl.items.slice();
    items[at] = null;
    next[ref.level] = { base: lvl.base, items };
    touched.add(ref.level);
  }
  for (const level of touched) {
    const lvl = next[level];
    if (lvl) next[level] = trimmed(lvl);
  }
  while (next.length > 0 && (next[next.length - 1]?.items.length ?? 0) === 0) next.pop();
  return next;
}

export function countNodes(store: NodeStore): number {
  let n = 0;
  for (const lvl of store) for (const item of lvl.items) if (item) n++;
  return n;
}

export const refKey = (ref: NodeRef): string => nodeKey(ref.level, ref.index);
