import { ZoomError } from "./errors.ts";
import { fromLineName, nodeId, nodeSize, type NodeRef } from "./names.ts";
import { outlineIndexOf } from "./thread-state.ts";

/** Characters of a message one zoom returns at most. */
export const ZOOM_PAGE = 25_000;

export type ZoomTarget =
  | { kind: "lines"; nodes: NodeRef[] }
  | { kind: "message"; position: number; offset: number; limit: number };

export interface ZoomScope {
  /** The outline's lines, oldest first (only their level and index are read). */
  outline: readonly NodeRef[];
  boundary: number;
  count: number;
}

export interface ZoomArgs {
  id: number;
  n: number;
  offset?: number | undefined;
  limit?: number | undefined;
}

function lineCovering(outline: readonly NodeRef[], position: number): NodeRef | undefined {
  return outline[outlineIndexOf(outline, position)];
}

/** A page's `offset` or `limit` is a whole number ≥ 0 (`fallback` when not given), else BAD_PAGE. */
export function wholeNumber(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ZoomError("BAD_PAGE", `${name} must be a whole number ≥ 0, got ${String(value)}`);
  }
  return value;
}

/**
 * SPEC §6: which nodes or which message a zoom reads, or a ZoomError naming the rule broken.
 * zoom(id, n) opens line id+n into its two halves; zoom(id, 1) gives message id whole.
 */
export function resolveZoom(scope: ZoomScope, args: ZoomArgs): ZoomTarget {
  const node = fromLineName(args.id, args.n);
  if (args.n === 1) {
    if (args.id >= scope.count) {
      throw new ZoomError(
        "ID_PAST_END",
        `message ${args.id} does not exist: the thread has ${scope.count} messages (0 to ${scope.count - 1})`,
      );
    }
    const offset = wholeNumber("offset", args.offset, 0);
    const limit = wholeNumber("limit", args.limit, ZOOM_PAGE);
    if (limit < 1 || limit > ZOOM_PAGE) {
      throw new ZoomError(
        "BAD_PAGE",
        `limit must be from 1 to ${ZOOM_PAGE} characters, got ${limit}`,
      );
    }
    return { kind: "message", position: args.id, offset, limit };
  }
  if (args.offset !== undefined || args.limit !== undefined) {
    throw new ZoomError("PAGE_ON_LINE", "offset and limit page a message: use them with n=1 only");
  }
  if (args.id >= scope.boundary) {
    throw new ZoomError(
      "ID_PAST_OUTLINE",
      scope.boundary === 0
        ? `id ${args.id} is past the outline, which is empty (the thread was never cut): every message is whole in the prompt (zoom(id, 1) reads one)`
        : `id ${args.id} is past the outline, which covers messages 0 to ${scope.boundary - 1}; messages from ${scope.boundary} on are whole in the prompt (zoom(id, 1) reads one)`,
    );
  }
  const line = lineCovering(scope.outline, args.id);
  if (!line || line.level < node.level) {
    const hint = line
      ? `; the line covering message ${args.id} is ${nodeId(line)}+${nodeSize(line)}`
      : "";
    throw new ZoomError(
      "NO_SUCH_LINE",
      `there is no line ${args.id}+${args.n} in the outline or inside one of its lines${hint}`,
    );
  }
  const half = node.level - 1;
  const first: NodeRef = { level: half, index: node.index * 2 };
  const second: NodeRef = { level: half, index: node.index * 2 + 1 };
  return { kind: "lines", nodes: nodeId(second) < scope.boundary ? [first, second] : [first] };
}

export interface Page {
  text: string;
  page: { offset: number; limit: number; total: number; next: number | null };
  note?: string;
}

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** `at` falls between the two halves of a surrogate pair (one character, two code units). */
const insidePair = (text: string, at: number) =>
  at > 0 && at < text.length && isHigh(text.charCodeAt(at - 1)) && isLow(text.charCodeAt(at));

/**
 * Pages a message's text. Offsets and limits count UTF-16 code units (JavaScript string indices),
 * but no page splits a character: an `offset` inside a surrogate pair starts the page at the
 * pair (the page's `offset` says where it starts), an end inside one ends it before the pair, and
 * a page holds at least one character (2 units for `limit` 1 on an astral one), so following
 * `next` gives the message back whole.
 */
export function pageText(text: string, requested: number, limit: number, explicit: boolean): Page {
  const total = text.length;
  if (requested > total) {
    throw new ZoomError(
      "BAD_PAGE",
      `offset ${requested} is past the end of the message (${total} characters)`,
    );
  }
  const offset = insidePair(text, requested) ? requested - 1 : requested;
  let end = Math.min(total, offset + limit);
  if (insidePair(text, end)) end = end - 1 > offset ? end - 1 : end + 1;
  const next = end < total ? end : null;
  const page = { offset, limit, total, next };
  const slice = text.slice(offset, end);
  if (next !== null) {
    return {
      text: slice,
      page,
      note: `[showing characters ${offset}-${end} of ${total}; next page: offset ${next}]`,
    };
  }
  if (explicit && offset === 0 && total <= limit) {
    return { text: slice, page, note: `[the message fits in one zoom: ${total} characters]` };
  }
  if (offset > 0)
    return {
      text: slice,
      page,
      note: `[showing characters ${offset}-${end} of ${total}; this is the last page]`,
    };
  return { text: slice, page };
}
