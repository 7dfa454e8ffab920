import { ZoomError } from "./errors.ts";

/** A node of the summary tree: level l, index k, covering messages [k·2^l, (k+1)·2^l). */
export interface NodeRef {
  level: number;
  index: number;
}

// Powers of two by table: these run in every batch step and zoom, and `**` is slow in V8.
const POW2 = Array.from({ length: 64 }, (_, l) => 2 ** l);
const pow2 = (level: number): number => POW2[level] ?? 2 ** level;

export const nodeId = (node: NodeRef): number => node.index * pow2(node.level);
export const nodeSize = (node: NodeRef): number => pow2(node.level);
/** Position of the last message a node covers. */
export const nodeLast = (node: NodeRef): number => nodeId(node) + nodeSize(node) - 1;
/** The line name `id+n`. */
export const lineName = (node: NodeRef): string => `${nodeId(node)}+${nodeSize(node)}`;
/** Compact key for maps and message ids: `level:index`. */
export const nodeKey = (level: number, index: number): string => `${level}:${index}`;

export function parseNodeKey(key: string): NodeRef {
  const [level, index] = key.split(":").map(Number);
  return { level: level ?? 0, index: index ?? 0 };
}

export const isPowerOfTwo = (n: number): boolean =>
  Number.isSafeInteger(n) && n >= 1 && (n & (n - 1)) === 0;

/**
 * `id+n` → (level, index), enforcing the rule: n is a power of two and id a multiple of n.
 * Throws a ZoomError naming the rule broken.
 */
export function fromLineName(id: number, n: number): NodeRef {
  if (!Number.isSafeInteger(id) || id < 0) {
    throw new ZoomError("BAD_ID", `id must be a whole number ≥ 0, got ${String(id)}`);
  }
  if (!isPowerOfTwo(n)) {
    throw new ZoomError(
      "N_NOT_POWER_OF_TWO",
      `n must be a power of two (1, 2, 4, 8, …), got ${String(n)}`,
    );
  }
  if (id % n !== 0) {
    throw new ZoomError(
      "ID_NOT_MULTIPLE_OF_N",
      `id must be a multiple of n: ${id} is not a multiple of ${n} (try id=${id - (id % n)})`,
    );
  }
  return { level: Math.log2(n), index: id / n };
}

/** The node an outline line shows (a line's id and n follow the rule: no check). */
export const lineRef = (line: { id: number; n: number }): NodeRef => ({
  level: Math.log2(line.n),
  index: line.id / line.n,
});

/** Parses the text form `id+n`. */
export function parseLineName(name: string): NodeRef {
  const match = /^(\d+)\+(\d+)$/.exec(name);
  if (!match)
    throw new ZoomError("BAD_LINE_NAME", `'${name}' is not a line name of the form id+n, e.g. 8+4`);
  return fromLineName(Number(match[1]), Number(match[2]));
}
