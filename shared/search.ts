import type { Message } from "./events.ts";

/**
 * What a search matches (SPEC §8): plain, case-insensitive text matching over a thread's original
 * messages. A message's searchable text is its text and the text of its tool steps, normalized
 * the same way as a query: Unicode NFC, every run of white space as one space. Matching ignores
 * case (É = é, Σ = σ = ς) but not accents (é ≠ e), and finds the query anywhere, inside words
 * too ("locker cod" finds "Locker code"). Logged echoes of zoom and search results are skipped:
 * they repeat what the originals say.
 */

/** Longest query, in characters: a search is for a fact, not a paste. */
export const MAX_QUERY_CHARS = 1_000;
/** About this many characters of a hit's text are shown around its match. */
export const SNIPPET_CHARS = 200;
/** How a snippet marks the match. */
export const MARK = ["«", "»"] as const;
/** Tools whose logged results are echoes of the thread itself. */
const ECHO_TOOLS = new Set(["zoom", "search"]);

/** NFC, white space runs as one space, trimmed: stored texts and queries alike. */
export function normalizeText(text: string): string {
  return text.normalize("NFC").replace(/\s+/gu, " ").trim();
}

/** Case folding as matching uses it: lower case, final sigma as sigma. */
export function fold(text: string): string {
  return text.toLowerCase().replaceAll("ς", "σ");
}

/**
 * Characters of scripts written without spaces between words, and emoji: a one or two character
 * query of these (会议, 🎉) is a word, so the index keeps their single characters and pairs.
 */
const DENSE =
  /^[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}\p{scx=Bopomofo}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}]$|^\u200d$|^\ufe0f$/u;

export const isDense = (char: string): boolean => DENSE.test(char);

/** A gram as an ASCII token (`u4f1a`, `b4f1ax8bae`): no tokenizer's Unicode tables involved. */
function gramToken(a: string, b?: string): string {
  const hex = (c: string) => (c.codePointAt(0) ?? 0).toString(16);
  return b === undefined ? `u${hex(a)}` : `b${hex(a)}x${hex(b)}`;
}

/**
 * The tokens a text's dense characters give: each character alone, and each pair of neighbours
 * that are both dense. Empty for text without any (most Latin text).
 */
export function denseGrams(text: string): string {
  const out = new Set<string>();
  let previous: string | undefined;
  for (const char of text) {
    if (!isDense(char)) {
      previous = undefined;
      continue;
    }
    out.add(gramToken(char));
    if (previous !== undefined) out.add(gramToken(previous, char));
    previous = char;
  }
  return [...out].join(" ");
}

/**
 * How a query is answered. Three characters or more: the trigram index. One or two dense
 * characters: the gram index. Any other one or two characters (`ok`, `42`, `é`): a scan of the
 * thread's newest messages, a bounded number per page.
 */
export type QueryPlan =
  | { kind: "trigram"; match: string; words?: WordsFirst }
  | { kind: "grams"; match: string }
  | { kind: "scan"; folded: string };

/**
 * A phrase of printable ASCII with words of 4+ characters: its words' index entries find the
 * messages holding all of them, and the text is checked for the phrase. A phrase's common
 * trigrams (` is`, `e i`) make the index read long lists; a fact's rare word makes the candidates
 * few (short words are mostly common ones: `and`, `the`). For ASCII the check's folding and the
 * index's are the same.
 */
export interface WordsFirst {
  /** The words of 4+ characters, each a phrase, all required (`"locker" AND "4711"`). */
  match: string;
  /** The query as the check finds it in a folded text. */
  folded: string;
}

const quoted = (text: string) => `"${text.replaceAll('"', '""')}"`;

/** `query` normalized and non-empty. */
export function planQuery(query: string): QueryPlan {
  const chars = [...query];
  if (chars.length >= 3) {
    const plan: QueryPlan = { kind: "trigram", match: quoted(query) };
    const words = query.split(" ").filter((w) => w.length >= 4);
    if (query.includes(" ") && words.length > 0 && /^[\x20-\x7e]+$/.test(query)) {
      plan.words = { match: words.map(quoted).join(" AND "), folded: fold(query) };
    }
    return plan;
  }
  if (chars.every(isDense)) {
    const [a = "", b] = chars;
    return { kind: "grams", match: gramToken(a, b) };
  }
  return { kind: "scan", folded: fold(query) };
}

/** The name of a tool step in the shapes platforms log them (OpenAI's, or `tool`/`name`). */
function stepTool(step: unknown): string | undefined {
  if (!step || typeof step !== "object") return undefined;
  const record = step as Record<string, unknown>;
  const fn = record.function;
  if (fn && typeof fn === "object") {
    const name = (fn as Record<string, unknown>).name;
    if (typeof name === "string") return name;
  }
  for (const key of ["tool", "name"] as const) {
    const value = record[key];
    if (typeof value === "string") return value;
  }
  return undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A zoom answer (lines, or a message with its page) or a search answer, as this API sends them. */
function isEchoBody(body: unknown): boolean {
  if (!isRecord(body)) return false;
  if (Array.isArray(body.hits) && "before" in body) return true;
  if (isRecord(body.message) && isRecord(body.page)) {
    return typeof body.message.position === "number" && typeof body.message.text === "string";
  }
  return (
    Array.isArray(body.lines) &&
    body.lines.length > 0 &&
    body.lines.every(
      (l) => isRecord(l) && typeof l.id === "number" && typeof l.n === "number" && "text" in l,
    )
  );
}

/** Outline lines as text (`8+4|…` on every line): a zoom answer a platform logged as text. */
const LINE_TEXT = /^\d+\+\d+\|/;

/**
 * A logged zoom or search result: a `tool` message whose text is such an answer (the API's JSON,
 * or outline lines `id+n|text`, one per line). Its text says again what other messages say.
 */
export function isToolEcho(message: Pick<Message, "role" | "text">): boolean {
  if (message.role !== "tool") return false;
  const text = message.text.trim();
  if (text.startsWith("{")) {
    try {
      return isEchoBody(JSON.parse(text));
    } catch {
      return false;
    }
  }
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  return lines.length > 0 && lines.every((l) => LINE_TEXT.test(l.trim()));
}

/** The strings and numbers a step holds, depth first (keys are the platform's, not the chat's). */
function stepWords(value: unknown, out: string[], depth: number): void {
  if (typeof value === "string") out.push(value);
  else if (typeof value === "number" || typeof value === "boolean") out.push(String(value));
  else if (depth < 8 && Array.isArray(value)) for (const v of value) stepWords(v, out, depth + 1);
  else if (depth < 8 && isRecord(value))
    for (const v of Object.values(value)) stepWords(v, out, depth + 1);
}

/**
 * What a message is searched by: its text and its tool steps' values, normalized; steps that are
 * zoom or search calls are left out. Undefined for a logged zoom or search result (no text kept).
 */
export function searchableText(
  message: Pick<Message, "role" | "text" | "steps">,
): string | undefined {
  if (isToolEcho(message)) return undefined;
  const parts = [message.text];
  for (const step of message.steps ?? []) {
    const tool = stepTool(step);
    if (tool !== undefined && ECHO_TOOLS.has(tool)) continue;
    stepWords(step, parts, 0);
  }
  return normalizeText(parts.join(" "));
}

/**
 * Where `query` (normalized) first occurs in `text`, ignoring case: [start, end) in `text`'s
 * UTF-16 units, or undefined. Folding that changes a text's length is mapped back per character.
 */
export function findMatch(text: string, query: string): [number, number] | undefined {
  const q = fold(query);
  const folded = fold(text);
  if (folded.length === text.length) {
    const at = folded.indexOf(q);
    return at < 0 ? undefined : [at, at + q.length];
  }
  let joined = "";
  const starts: number[] = [];
  let offset = 0;
  for (const char of text) {
    const f = fold(char);
    for (let i = 0; i < f.length; i++) starts.push(offset);
    joined += f;
    offset += char.length;
  }
  starts.push(offset);
  const at = joined.indexOf(q);
  if (at < 0) return undefined;
  const end = at + q.length;
  return [starts[at] ?? 0, end < starts.length ? (starts[end] ?? offset) : offset];
}

/** Moves an index off the second half of a surrogate pair. */
function whole(text: string, at: number): number {
  const code = text.charCodeAt(at);
  return at > 0 && code >= 0xdc00 && code <= 0xdfff ? at - 1 : at;
}

/**
 * About SNIPPET_CHARS characters of `text` around the first match of `query`, the match marked
 * «like this», with … where the text goes on. Without a match (folding that differs from the
 * index's in a rare character): the text's start.
 */
export function snippet(text: string, query: string): string {
  const match = findMatch(text, query);
  if (!match) {
    return text.length <= SNIPPET_CHARS ? text : `${text.slice(0, whole(text, SNIPPET_CHARS))}…`;
  }
  const [start, end] = match;
  const open = start > 0 ? "…" : "";
  if (end - start >= SNIPPET_CHARS) {
    // A match longer than the snippet: its start, cut.
    const cut = whole(text, start + SNIPPET_CHARS);
    return `${open}${MARK[0]}${text.slice(start, cut)}…${MARK[1]}`;
  }
  const room = SNIPPET_CHARS - (end - start);
  let from = Math.max(0, start - Math.floor(room / 2));
  const to = whole(text, Math.min(text.length, from + SNIPPET_CHARS));
  from = whole(text, Math.max(0, Math.min(from, to - SNIPPET_CHARS)));
  return `${from > 0 ? "…" : ""}${text.slice(from, start)}${MARK[0]}${text.slice(start, end)}${MARK[1]}${text.slice(end, to)}${to < text.length ? "…" : ""}`;
}

/** An outline line as the snapshot lists it. */
export interface CoveringLine {
  id: number;
  n: number;
}

/**
 * The name (`1024+256`) of the outline line holding message `position`, or null when the message
 * is whole (in the tail, or stored after the snapshot). `lines` tile [0, boundary), oldest first.
 */
export function lineHolding(
  lines: readonly CoveringLine[],
  boundary: number,
  position: number,
): string | null {
  if (position >= boundary) return null;
  let lo = 0;
  let hi = lines.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const line = lines[mid] as CoveringLine;
    if (position < line.id) hi = mid - 1;
    else if (position >= line.id + line.n) lo = mid + 1;
    else return `${line.id}+${line.n}`;
  }
  return null;
}
