/**
 * A state value as one string: `idle`, `active.idle` for nested states, and parallel regions
 * by name, joined by commas (`slot.open,thread.active.idle`). XState orders a parallel state's
 * regions as they were entered, so they are named in key order: one state, one name.
 */
export function stateName(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value !== "object" || value === null) return "?";
  return Object.keys(value)
    .sort()
    .map((key) => {
      const inner = (value as Record<string, unknown>)[key];
      return typeof inner === "object" && inner !== null && isEmpty(inner)
        ? key
        : `${key}.${stateName(inner)}`;
    })
    .join(",");
}

/**
 * Whether a state value is the state `name` (as stateName writes it), without building names:
 * the host asks it after every event its actor takes.
 */
export function isState(value: unknown, name: string): boolean {
  return matchAt(value, name, 0) === name.length;
}

/** Where stateName(value), read in `name` from `at`, ends; -1 when it is not there. */
function matchAt(value: unknown, name: string, at: number): number {
  if (typeof value === "string") return name.startsWith(value, at) ? at + value.length : -1;
  if (typeof value !== "object" || value === null) return name.startsWith("?", at) ? at + 1 : -1;
  const record = value as Record<string, unknown>;
  // Two regions (the thread machine's) in key order without an array; more, by a sorted copy.
  let first: string | undefined;
  let second: string | undefined;
  let more = false;
  for (const key in record) {
    if (first === undefined) first = key;
    else if (second === undefined) second = key;
    else more = true;
  }
  if (first === undefined) return at;
  if (more) {
    for (const [i, key] of Object.keys(record).sort().entries()) {
      if (i > 0 && name.charCodeAt(at++) !== 44) return -1; // ","
      at = matchEntry(key, record[key], name, at);
      if (at < 0) return -1;
    }
    return at;
  }
  if (second !== undefined && second < first) [first, second] = [second, first];
  at = matchEntry(first, record[first], name, at);
  if (second === undefined || at < 0) return at;
  if (name.charCodeAt(at) !== 44) return -1; // ","
  return matchEntry(second, record[second], name, at + 1);
}

/** Where `key` and its inner state, read in `name` from `at`, end; -1 when not there. */
function matchEntry(key: string, inner: unknown, name: string, at: number): number {
  if (!name.startsWith(key, at)) return -1;
  at += key.length;
  if (typeof inner === "object" && inner !== null && isEmpty(inner)) return at;
  if (name.charCodeAt(at) !== 46) return -1; // "."
  return matchAt(inner, name, at + 1);
}

function isEmpty(value: object): boolean {
  for (const _ in value) return false;
  return true;
}
