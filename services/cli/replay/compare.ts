import type { OutlineSnapshot } from "../../../shared/snapshot.ts";

/** One field that differs: `path` like `lines[3].text`. */
export interface Difference {
  path: string;
  stored: unknown;
  rebuilt: unknown;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function walk(path: string, stored: unknown, rebuilt: unknown, out: Difference[]): void {
  if (Array.isArray(stored) && Array.isArray(rebuilt)) {
    // Arrays of scalars (tail ids, sequences) read best as one difference when their length
    // differs; element by element otherwise, so a single changed line is named.
    const length = Math.max(stored.length, rebuilt.length);
    if (stored.length !== rebuilt.length) {
      out.push({ path: `${path}.length`, stored: stored.length, rebuilt: rebuilt.length });
    }
    for (let i = 0; i < length; i++) {
      if (i >= stored.length || i >= rebuilt.length) continue;
      walk(`${path}[${i}]`, stored[i], rebuilt[i], out);
    }
    return;
  }
  if (isObject(stored) && isObject(rebuilt)) {
    const keys = new Set([...Object.keys(stored), ...Object.keys(rebuilt)]);
    for (const key of keys) walk(path ? `${path}.${key}` : key, stored[key], rebuilt[key], out);
    return;
  }
  if (!Object.is(stored, rebuilt)) out.push({ path, stored, rebuilt });
}

/** Every field of the stored snapshot that the rebuilt one does not reproduce. */
export function compareSnapshots(
  stored: OutlineSnapshot | undefined,
  rebuilt: OutlineSnapshot | undefined,
): Difference[] {
  if (stored === undefined && rebuilt === undefined) return [];
  if (stored === undefined) return [{ path: "(snapshot)", stored: "none", rebuilt: "present" }];
  if (rebuilt === undefined) return [{ path: "(snapshot)", stored: "present", rebuilt: "none" }];
  const out: Difference[] = [];
  // A snapshot stored before snapshots showed their settings is not different for lacking them,
  // nor one stored before a thread never cut showed its `since` (null then).
  const comparable = {
    ...rebuilt,
    ...(stored.settings === undefined ? { settings: undefined } : {}),
    ...(stored.since === null && stored.boundary === 0 ? { since: null } : {}),
  };
  walk("", stored, comparable, out);
  return out;
}

const shown = (v: unknown): string => {
  const text = JSON.stringify(v) ?? "undefined";
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
};

export function formatDifference(thread: string, d: Difference): string {
  return `  ${thread}: ${d.path}: stored ${shown(d.stored)}, rebuilt ${shown(d.rebuilt)}`;
}
