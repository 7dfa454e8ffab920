// A node's digest: the units (sentences, with who said them) most worth keeping from everything
// the node covers, not only those its line had room for. A merge chooses its line from its two
// children's digests and hands the best of both on to its parent, so a level-7 line chooses
// among the best sentences of its 128 messages at the cost of choosing among 32.
import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import { shorten } from "./compose.ts";
import { lineIdeas, textIdeas } from "./segment.ts";
import { clausesOf, makeUnit, type Unit } from "./units.ts";

export interface Digest {
  /** The line the digest was made with: a merge uses a digest only for the line it names. */
  line: string;
  units: Unit[];
}

/** Units a digest keeps: enough runners-up for the parent, few enough to stay cheap. */
export const DIGEST_UNITS = 16;
/** A unit is at most this long: a longer sentence keeps its weightiest clauses. */
export const UNIT_BYTES = 280;
/** A long message is read for units up to this many sentences from its start and end. */
const HEAD_SENTENCES = 48;
const TAIL_SENTENCES = 16;

/** Sum of the weights of `unit`'s terms that stand in `text` (lower case). */
function weightIn(unit: Unit, lower: string): number {
  let sum = 0;
  for (let i = 0; i < unit.terms.length; i++)
    if (lower.includes(unit.terms[i] as string)) sum += unit.weights[i] as number;
  return sum;
}

/**
 * `text` in at most `room` bytes: the run of clauses that carries the most terms, marked `…`
 * where it was cut; a single clause too long is cut at a word. Empty when nothing fits.
 */
export function tighten(unit: Unit, text: string, room: number): string {
  if (utf8Bytes(text) <= room) return text;
  const clauses = clausesOf(text);
  const mark = utf8Bytes("…");
  let best = "";
  let bestWeight = -1;
  for (let i = 0; i < clauses.length; i++) {
    let joined = "";
    for (let j = i; j < clauses.length; j++) {
      joined = joined ? `${joined} ${clauses[j] as string}` : (clauses[j] as string);
      const candidate = `${i > 0 ? "…" : ""}${joined.replace(/[\s,;:—–-]+$/u, "")}${j < clauses.length - 1 ? "…" : ""}`;
      const bytes = utf8Bytes(candidate);
      if (bytes > room) break;
      const weight = weightIn(unit, candidate.toLowerCase()) + bytes / 1e4;
      if (weight > bestWeight) {
        best = candidate;
        bestWeight = weight;
      }
    }
  }
  if (best) return best;
  return room > mark ? shorten(text, room) : "";
}

/** The units of a message, its weightiest kept (at most DIGEST_UNITS), in the order said. */
export function messageUnits(
  who: string,
  at: number,
  text: string,
  extra: readonly string[] = [],
): Unit[] {
  let sentences = textIdeas(text).flatMap((idea) => idea.sentences);
  if (sentences.length > HEAD_SENTENCES + TAIL_SENTENCES) {
    sentences = [...sentences.slice(0, HEAD_SENTENCES), ...sentences.slice(-TAIL_SENTENCES)];
  }
  sentences.push(...extra);
  const units: Unit[] = [];
  for (const [nth, sentence] of sentences.entries()) {
    const full = makeUnit(who, at, nth, sentence);
    const text = tighten(full, sentence, UNIT_BYTES);
    if (!text) continue;
    units.push(text === sentence ? full : makeUnit(who, at, nth, text));
  }
  return keepBest(units, DIGEST_UNITS);
}

/** The `max` units of highest score (the earlier on a tie), in their order. */
function keepBest(units: Unit[], max: number): Unit[] {
  if (units.length <= max) return units;
  const ranked = units
    .map((unit, i) => ({ unit, i }))
    .sort((a, b) => b.unit.score - a.unit.score || a.i - b.i)
    .slice(0, max);
  return ranked.sort((a, b) => a.i - b.i).map((r) => r.unit);
}

/** The speaker of a line's turn head: `Ana → Bo: ` and `Ana: ` are both Ana. */
function speakerOf(head: string): string {
  const who = head.replace(/:\s*$/, "");
  const arrow = who.indexOf(" → ");
  return arrow >= 0 ? who.slice(0, arrow) : who;
}

/**
 * A digest read back from a line alone, for a node whose digest this process does not hold (a
 * free node, or one built before a restart): each clause of each turn is a unit, its position
 * estimated from where the turn stands in the line. An `(also: …)` list is dropped.
 */
export function lineDigest(line: string, id: number, n: number): Digest {
  const { ideas, turns } = lineIdeas(line);
  const units: Unit[] = [];
  let nth = 0;
  let turn = -1;
  for (const idea of ideas) {
    nth = idea.turn === turn ? nth + 1 : 0;
    turn = idea.turn;
    const text = idea.sentences.join(" ").trim();
    if (!text) continue;
    const at = id + Math.floor((idea.turn * n) / Math.max(1, turns));
    units.push(makeUnit(speakerOf(idea.head), at, nth, cutToBytes(text, UNIT_BYTES * 2)));
  }
  return { line, units: keepBest(units, DIGEST_UNITS * 2) };
}

/**
 * The parent's digest: every unit its line shows, then the best of the rest, at least a quarter
 * from each half while it has them; in the order said.
 */
export function parentUnits(left: Unit[], right: Unit[], shown: ReadonlySet<Unit>): Unit[] {
  const pool = [...left, ...right];
  if (pool.length <= DIGEST_UNITS) return pool;
  const keep = new Set<Unit>([...shown].slice(0, DIGEST_UNITS));
  const floor = Math.floor(DIGEST_UNITS / 4);
  for (const half of [left, right]) {
    const ranked = half
      .filter((u) => !keep.has(u))
      .sort((a, b) => b.score - a.score || a.at - b.at || a.nth - b.nth);
    let have = half.filter((u) => keep.has(u)).length;
    for (const unit of ranked) {
      if (have >= floor || keep.size >= DIGEST_UNITS) break;
      keep.add(unit);
      have++;
    }
  }
  const rest = pool
    .filter((u) => !keep.has(u))
    .sort((a, b) => b.score - a.score || a.at - b.at || a.nth - b.nth);
  for (const unit of rest) {
    if (keep.size >= DIGEST_UNITS) break;
    keep.add(unit);
  }
  return pool.filter((u) => keep.has(u));
}
