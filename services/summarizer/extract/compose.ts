import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import type { Entity } from "./entities.ts";
import type { Idea } from "./segment.ts";
import { isSpace } from "./units.ts";

/** Share of the line the `(also: …)` list may claim before sentences that carry entities. */
const RESERVE = 0.3;
const ELLIPSIS = "…";
/** Its UTF-8 bytes, counted once. */
export const ELLIPSIS_BYTES = utf8Bytes(ELLIPSIS);
const MAX_ENTITIES = 96;
const SEP_BYTES = 3; // " / ", the widest separator

export interface ComposeInput {
  ideas: Idea[];
  /** Candidates for the `(also: …)` list, kept when the chosen sentences do not contain them. */
  entities: Entity[];
  /** Ideas kept before all others (the message's opening, the start of each merged line). */
  pinned: ReadonlySet<number>;
  /** Least valuable, added last when there is room (tool steps); `short` when only that fits. */
  note?: { full: string; short: string };
  limit: number;
}

interface Piece {
  idea: number;
  head: string;
  turn: number;
  sentences: string[];
  /** The first sentence was cut: adding later ones would read as if it had not been. */
  cut: boolean;
}

/** A sentence cut to `room` bytes at a word when one is near, marked with an ellipsis. */
export function shorten(sentence: string, room: number): string {
  const whole = utf8Bytes(sentence);
  if (whole <= room) return sentence;
  // (Only a sentence with a parenthesis has one to drop: no scan of one without.)
  const bare = sentence.includes("(") ? sentence.replace(/\s*\([^()]*\)/g, "") : sentence;
  if (bare && (bare === sentence ? whole : utf8Bytes(bare)) <= room) return bare;
  if (room <= ELLIPSIS_BYTES) return "";
  let cut = cutToBytes(bare, room - ELLIPSIS_BYTES);
  const space = cut.lastIndexOf(" ");
  if (space > cut.length * 0.6) cut = cut.slice(0, space);
  cut = trimEndMarks(cut);
  return cut ? cut + ELLIPSIS : "";
}

/**
 * `text.replace(/[\s,;:–—-]+$/u, "")`: spaces and marks off the end, looked for from the end
 * (the RegExp tries every space of the text on its way there).
 */
export function trimEndMarks(text: string): string {
  let end = text.length;
  while (end > 0 && isEndMark(text.charCodeAt(end - 1))) end--;
  return end === text.length ? text : text.slice(0, end);
}

function isEndMark(c: number): boolean {
  return isSpace(c) || c === 44 || c === 59 || c === 58 || c === 45 || c === 0x2013 || c === 0x2014;
}

/** A speaker's head takes at most a third of the line, so two of them leave room to speak. */
function fitHead(head: string, limit: number): string {
  const max = Math.floor(limit / 3);
  if (utf8Bytes(head) <= max) return head;
  const name = cutToBytes(head.replace(/:\s*$/, ""), max - 2).trim();
  return name ? `${name}: ` : "";
}

/** Pieces in order; a speaker's head opens each turn, ` / ` separates turns. */
function render(pieces: readonly Piece[]): string {
  let out = "";
  // out's last code unit: what `/[.!?。！？…:]$/u` asks, without a RegExp on a growing string.
  let last = -1;
  let turn = -1;
  for (const piece of pieces) {
    const showHead = piece.turn !== turn && piece.head !== "";
    const text = piece.sentences.join(" ");
    if (!text && !showHead) continue;
    if (out) out += piece.turn !== turn ? " / " : endsSentence(last) ? " " : "; ";
    const added = (showHead ? piece.head : "") + text; // never empty: a text or a head
    out += added;
    last = added.charCodeAt(added.length - 1);
    turn = piece.turn;
  }
  return out.trim();
}

function endsSentence(c: number): boolean {
  return (
    c === 46 || // .
    c === 33 || // !
    c === 63 || // ?
    c === 0x3002 || // 。
    c === 0xff01 || // ！
    c === 0xff1f || // ？
    c === 0x2026 || // …
    c === 58 // :
  );
}

const ALSO_OPENING = utf8Bytes(" (also: )");

function alsoBytes(items: readonly { text: string }[]): number {
  if (items.length === 0) return 0;
  let bytes = ALSO_OPENING;
  for (const item of items) bytes += utf8Bytes(item.text) + 2;
  return bytes - 2;
}

/** Most valuable first: pinned ideas, then by the exact tokens they hold, then oldest. */
function rankIdeas(
  ideas: readonly Idea[],
  entities: readonly Entity[],
  pinned: ReadonlySet<number>,
) {
  const weight = ideas.map((idea, i) => {
    const text = idea.sentences.join(" ");
    let score = pinned.has(i) ? 1e6 : 0;
    for (const entity of entities)
      if (text.includes(entity.text)) score += entity.tier === 1 ? 3 : 1;
    return score;
  });
  return ideas.map((_, i) => i).sort((a, b) => (weight[b] ?? 0) - (weight[a] ?? 0) || a - b);
}

/**
 * A dropped idea in a few words, so the line can still say it was there when room is left;
 * with its speaker when none of that turn made it into the line.
 */
function label(idea: Idea, at: number, withHead: boolean): Entity {
  const words = (idea.sentences[0] ?? "")
    .replace(/[,;()]/g, "")
    .split(/\s+/)
    .slice(0, 3)
    .join(" ");
  const text = cutToBytes(`${withHead ? idea.head : ""}${words}`, 48).trim();
  return { text, kind: "carried", tier: 3, at };
}

/**
 * Builds one line of at most `limit` bytes. The opening of each pinned idea goes in first (cut
 * to a fair share if it must be); then, most valuable first, the first sentence of every other
 * idea that fits whole; then, round by round, further sentences of the ideas kept whole; then
 * the entities the chosen text lost; then the note. A sentence that names nothing new only goes
 * in if every entity the line lost still fits after it. Pure and deterministic.
 */
export function compose(input: ComposeInput): string {
  const { limit, pinned } = input;
  const ideas = input.ideas.map((idea) => ({ ...idea, head: fitHead(idea.head, limit) }));
  const noteMin = input.note ? utf8Bytes(input.note.short) + 3 : 0;
  const budget = limit - noteMin;
  const reserveCap = Math.floor(limit * RESERVE);
  // A line lists a few dozen items at most: weighing thousands (a pasted log) only costs time.
  const entities = [...input.entities]
    .sort((a, b) => a.tier - b.tier || a.at - b.at)
    .slice(0, Math.max(MAX_ENTITIES, Math.ceil(limit / 4)));
  const uncoveredBy = (text: string) => entities.filter((e) => !text.includes(e.text));

  const pieces: Piece[] = [];
  const insert = (piece: Piece): Piece[] => [...pieces, piece].sort((a, b) => a.idea - b.idea);
  const pieceOf = (i: number, sentences: string[], cut: boolean): Piece => {
    const idea = ideas[i];
    return { idea: i, head: idea?.head ?? "", turn: idea?.turn ?? 0, sentences, cut };
  };
  let body = "";
  let lost = uncoveredBy(body);
  /** Takes `next` if it and the list of what it still loses fit; says whether it did. */
  const tryBody = (next: Piece[]): boolean => {
    const trial = render(next);
    const trialLost = uncoveredBy(trial);
    const carries = trialLost.length < lost.length;
    const reserve = carries ? Math.min(reserveCap, alsoBytes(trialLost)) : alsoBytes(trialLost);
    if (utf8Bytes(trial) + reserve > budget) return false;
    pieces.splice(0, pieces.length, ...next);
    body = trial;
    lost = trialLost;
    return true;
  };

  // Pinned openings first, each cut to a fair share of what the list of entities leaves.
  const pinnedIdeas = ideas.map((_, i) => i).filter((i) => pinned.has(i));
  const others = ideas.length - pinnedIdeas.length;
  const room =
    budget -
    Math.min(
      reserveCap,
      alsoBytes(
        uncoveredBy(render(ideas.map((idea, i) => pieceOf(i, idea.sentences.slice(0, 1), false)))),
      ),
    );
  const share = Math.floor(room / (pinnedIdeas.length + (others > 0 ? 1 : 0)));
  for (const i of pinnedIdeas) {
    const first = ideas[i]?.sentences[0] ?? "";
    const headRoom = share - utf8Bytes(ideas[i]?.head ?? "") - SEP_BYTES;
    const short = shorten(first, Math.max(0, headRoom));
    const piece = pieceOf(i, short ? [short] : [], short !== first);
    pieces.splice(0, pieces.length, ...insert(piece));
  }
  body = render(pieces);
  // Heads and separators can push the pinned openings past their shares: trim the longest.
  for (let guard = 0; utf8Bytes(body) > budget && guard < 16; guard++) {
    const longest = pieces.reduce((a, b) =>
      utf8Bytes(b.sentences.join(" ")) > utf8Bytes(a.sentences.join(" ")) ? b : a,
    );
    const text = longest.sentences.join(" ");
    const short = shorten(text, utf8Bytes(text) - (utf8Bytes(body) - budget));
    longest.sentences = short ? [short] : [];
    longest.cut = true;
    body = render(pieces);
  }
  lost = uncoveredBy(body);

  // The other ideas' first sentences, whole, most valuable first.
  const kept = new Set(pinnedIdeas);
  for (const i of rankIdeas(ideas, entities, pinned)) {
    if (kept.has(i)) continue;
    const first = ideas[i]?.sentences[0];
    if (first === undefined) continue;
    if (tryBody(insert(pieceOf(i, [first], false)))) kept.add(i);
  }

  // Further sentences, round by round so every idea gets its second before any its third.
  for (let round = 1; ; round++) {
    let added = false;
    for (const p of [...pieces]) {
      const sentence = ideas[p.idea]?.sentences[round];
      if (p.cut || sentence === undefined || p.sentences.length !== round) continue;
      const grown = { ...p, sentences: [...p.sentences, sentence] };
      if (tryBody(pieces.map((q) => (q === p ? grown : q)))) added = true;
      else p.cut = true;
    }
    if (!added) break;
  }

  // What the chosen sentences lost, most exact first, listed in the order it came.
  const dropped = ideas
    .map((idea, i) => ({ idea, i }))
    .filter(({ i }) => !kept.has(i))
    .map(({ idea, i }) => label(idea, 1e9 + i, !pieces.some((p) => p.turn === idea.turn)))
    .filter((l) => l.text && !body.includes(l.text));
  const candidates = [...uncoveredBy(body), ...dropped].sort(
    (a, b) => a.tier - b.tier || a.at - b.at,
  );
  const also: Entity[] = [];
  let left = budget - utf8Bytes(body);
  for (const candidate of candidates) {
    if (also.some((a) => a.text.includes(candidate.text))) continue;
    // alsoBytes([...also, candidate]) - alsoBytes(also): the opening with the first item, else
    // the item and its ", ".
    const extra = utf8Bytes(candidate.text) + (also.length === 0 ? ALSO_OPENING : 2);
    if (extra <= left) {
      also.push(candidate);
      left -= extra;
    }
  }
  also.sort((a, b) => a.at - b.at);
  let line = body + (also.length ? ` (also: ${also.map((a) => a.text).join(", ")})` : "");
  if (input.note) {
    const free = limit - utf8Bytes(line);
    const full = ` [${input.note.full}]`;
    if (utf8Bytes(full) <= free) line += full;
    else if (utf8Bytes(input.note.short) + 3 <= free) line += ` [${input.note.short}]`;
  }
  // The budget above already holds; this only guards the contract against a miscount.
  return utf8Bytes(line) <= limit ? line : cutToBytes(line, limit);
}
