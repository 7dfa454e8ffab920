// Copy-on-write inside one transition. A transition works on a shallow copy of its input state;
// the first change to an array or object it still shares with the input copies it, and later
// changes in the same transition go to that copy in place. So the input is never modified, and a
// transition that appends to a list ten times copies it once, not ten times. Outside a
// transition nothing is a transition's own, and every change copies.

let own: Set<object> | null = null;

/** Starts a transition; returns what `endDraft` restores (a transition may run inside another). */
export function beginDraft(): Set<object> | null {
  const outer = own;
  own = new Set();
  return outer;
}

export function endDraft(outer: Set<object> | null): void {
  own = outer;
}

/** Marks a value the transition made itself, so it may change it in place. */
export function claim<T extends object>(value: T): T {
  own?.add(value);
  return value;
}

/** The array to change: `list` itself when the transition made it, otherwise a copy. */
export function writable<T>(list: readonly T[]): T[] {
  if (own?.has(list)) return list as T[];
  return claim(list.slice());
}

/** The object to change: `value` itself when the transition made it, otherwise a shallow copy. */
export function writableObject<T extends object>(value: T): T {
  if (own?.has(value)) return value;
  return claim({ ...value });
}
