// Message ids of the tail, for the duplicate check without a scan of the tail per message.
//
// A tail array is never modified; each transition that appends or cuts makes a new one. The
// index of ids follows that line of states: a transition hands it from the old array to the new
// one and updates it. An array whose index was handed on (an older state used again: a retry, a
// test) gets a new index built from its entries on its first check. The cache is invisible: the
// answers are those of a scan of the tail.
import type { TailEntry } from "./thread-state.ts";

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

export /** The tail entry holding message `id`, if any. */
function findInTail(tail: readonly TailEntry[], id: string): TailEntry | undefined {
  const position = idsOf(tail).ids.get(id);
  if (position === undefined) return undefined;
  const first = tail[0];
  return first ? tail[position - first.position] : undefined;
}

/** `next` is `tail` plus `added` at its end, less its first `removed` entries. */
export function handOverIds(
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
