// A node's digest: the units (sentences, with who said them) most worth keeping from everything
// the node covers, not only those its line had room for. A merge chooses its line from its two
// children's digests and hands the best of both on to its parent, so a level-7 line chooses
// among the best sentences of its 128 messages at the cost of choosing among 32.
import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import { ELLIPSIS_BYTES, shorten, trimEndMarks } from "./compose.ts";
import { findEntities, type Entity } from "./entities.ts";
import { lineIdeas } from "./segment.ts";
import { clauseSpans, countedTerms, makeUnit, type Unit } from "./units.ts";

export interface Digest {
  /** The line the digest was made with: a merge uses a digest only for the line it names. */
  line: string;
  units: Unit[];
  /**
   * The terms said in most of the messages the node covers, with in how many (the most
   * frequent COMMON_TERMS): a term the whole stretch keeps saying tells little about any one
   * sentence, one said once tells a lot.
   */
  common: TermCounts;
}

/** Terms and how many messages said each, most first. */
export interface TermCounts {
  terms: string[];
  counts: number[];
}

/** Terms a digest counts: enough to know a stretch's usual words, few enough to merge fast. */
export const COMMON_TERMS = 48;

/** Units a digest keeps: enough runners-up for the parent, few enough to stay cheap. */
export const DIGEST_UNITS = 16;
/** A unit is at most this long: a longer sentence keeps its weightiest clauses. */
export const UNIT_BYTES = 280;
/** A long message is read for units up to this many sentences from its start and end. */
const HEAD_SENTENCES = 48;
const TAIL_SENTENCES = 16;

/**
 * `text` in at most `room` bytes: the run of clauses that carries the most terms, marked `…`
 * where it was cut; a single clause too long is cut at a word. Empty when nothing fits. Each
 * clause's bytes and terms are found once; only the chosen run is put together.
 */
export function tighten(unit: Unit, text: string, room: number): string {
  return tightenTo(unit, text, room, true);
}

/** A text's clauses as tighten weighs them: offsets, UTF-8 bytes, terms held (by index). */
interface Clauses {
  spans: number[];
  bytes: number[];
  held: number[][];
}

// A unit's own text is cut again by every merge up the tree that shows it: its clauses are read
// once. Units are never changed once made, so the entry holds as long as the unit lives.
const clausesOfUnit = new WeakMap<Unit, Clauses>();

function tightenTo(unit: Unit, text: string, room: number, keep: boolean): string {
  const whole = text === unit.text ? unit.bytes : utf8Bytes(text);
  if (whole <= room) return text;
  let clauses = text === unit.text ? clausesOfUnit.get(unit) : undefined;
  if (!clauses) {
    clauses = readClauses(unit, text, whole === text.length);
    if (keep && text === unit.text) clausesOfUnit.set(unit, clauses);
  }
  const { spans, bytes, held } = clauses;
  const count = bytes.length;
  const mark = ELLIPSIS_BYTES;
  let best: [number, number] | undefined;
  let bestWeight = -1;
  const seen = new Uint32Array(unit.terms.length);
  let stamp = 0;
  for (let i = 0; i < count; i++) {
    let size = i > 0 ? mark : 0;
    let weight = 0;
    stamp++;
    for (let j = i; j < count; j++) {
      size += (bytes[j] as number) + (j > i ? 1 : 0);
      if (size + (j < count - 1 ? mark : 0) > room) break;
      for (const t of held[j] as number[]) {
        if (seen[t] === stamp) continue;
        seen[t] = stamp;
        weight += unit.weights[t] as number;
      }
      // Ties go to the longer run: more of what was said.
      const score = weight + size / 1e4;
      if (score > bestWeight) {
        best = [i, j];
        bestWeight = score;
      }
    }
  }
  if (best) {
    const [i, j] = best;
    let run = text.slice(spans[2 * i], spans[2 * i + 1]);
    for (let k = i + 1; k <= j; k++) run += ` ${text.slice(spans[2 * k], spans[2 * k + 1])}`;
    run = trimEndMarks(run);
    return `${i > 0 ? "…" : ""}${run}${j < count - 1 ? "…" : ""}`;
  }
  return room > mark ? shorten(text, room) : "";
}

/** Clauses of `text` (ASCII when `ascii`) and the terms of `unit` each holds. */
function readClauses(unit: Unit, text: string, ascii: boolean): Clauses {
  const spans = clauseSpans(text);
  const count = spans.length / 2;
  const bytes: number[] = new Array<number>(count);
  // The terms (by index in the unit) each clause holds; a term split across clauses is missed.
  const held: number[][] = [];
  for (let c = 0; c < count; c++) held.push([]);
  if (ascii) {
    // Clauses of ASCII text are ASCII: a byte per character. Lower-casing keeps offsets: each
    // term's occurrences in the whole text, found once, tell which clauses hold it.
    for (let c = 0; c < count; c++)
      bytes[c] = (spans[2 * c + 1] as number) - (spans[2 * c] as number);
    const lower = text.toLowerCase();
    for (let t = 0; t < unit.terms.length; t++) {
      const term = unit.terms[t] as string;
      let c = 0;
      for (let at = lower.indexOf(term); at >= 0 && c < count;) {
        // Past the clauses that end before this occurrence does; held if it starts in the next.
        while (c < count && (spans[2 * c + 1] as number) < at + term.length) c++;
        if (c === count) break;
        if ((spans[2 * c] as number) <= at) {
          (held[c] as number[]).push(t);
          c++;
          if (c === count) break;
          at = lower.indexOf(term, Math.max(at + 1, spans[2 * c] as number));
        } else at = lower.indexOf(term, spans[2 * c]);
      }
    }
  } else {
    for (let c = 0; c < count; c++) {
      const clause = text.slice(spans[2 * c], spans[2 * c + 1]);
      bytes[c] = utf8Bytes(clause);
      const lower = clause.toLowerCase();
      const terms = held[c] as number[];
      for (let t = 0; t < unit.terms.length; t++)
        if (lower.includes(unit.terms[t] as string)) terms.push(t);
    }
  }
  return { spans, bytes, held };
}

/** The most frequent `max` of `counts` (ties by term, so the result does not depend on order). */
function topCounts(counts: Map<string, number>, max: number): TermCounts {
  // Terms by count, most first, each count's terms in code-unit order (a plain sort's, as `<`
  // compares): the order a sort of every entry by count, then term, gives. Only the counts that
  // make the cut are sorted, and most terms share a count.
  const byCount = new Map<number, string[]>();
  for (const [term, count] of counts) {
    const terms = byCount.get(count);
    if (terms) terms.push(term);
    else byCount.set(count, [term]);
  }
  const order = [...byCount.keys()].sort((a, b) => b - a);
  const terms: string[] = [];
  const kept: number[] = [];
  for (const count of order) {
    if (terms.length >= max) break;
    const group = (byCount.get(count) as string[]).sort();
    for (let i = 0; i < group.length && terms.length < max; i++) {
      terms.push(group[i] as string);
      kept.push(count);
    }
  }
  return { terms, counts: kept };
}

/** Two stretches' counts added up (they cover different messages). */
export function addCounts(a: TermCounts, b: TermCounts): TermCounts {
  const sum = new Map<string, number>();
  for (const side of [a, b])
    side.terms.forEach((term, i) => sum.set(term, (sum.get(term) ?? 0) + (side.counts[i] ?? 0)));
  return topCounts(sum, COMMON_TERMS);
}

/** Counts where each group of units is one message: a term counts once per group. */
function countsOf(groups: readonly (readonly Unit[])[]): TermCounts {
  const counts = new Map<string, number>();
  for (const units of groups) {
    const said = new Set<string>();
    for (const unit of units) for (const term of unit.terms) said.add(term);
    for (const term of said) counts.set(term, (counts.get(term) ?? 0) + 1);
  }
  return topCounts(counts, COMMON_TERMS);
}

/**
 * A message's digest from its sentences (and the exact tokens found in it): its weightiest units
 * (at most DIGEST_UNITS) in the order said.
 */
export function messageDigest(
  line: string,
  who: string,
  at: number,
  said: readonly string[],
  found: readonly Entity[],
): Digest {
  const sentences =
    said.length > HEAD_SENTENCES + TAIL_SENTENCES
      ? [...said.slice(0, HEAD_SENTENCES), ...said.slice(-TAIL_SENTENCES)]
      : said;
  const units: Unit[] = [];
  const seen = new Set<string>();
  for (const [nth, sentence] of sentences.entries()) {
    // A sentence said twice in one message is one unit.
    if (seen.has(sentence)) continue;
    seen.add(sentence);
    const bytes = utf8Bytes(sentence);
    if (bytes <= UNIT_BYTES) {
      // Fits whole (tighten would give it back as it is).
      if (sentence) units.push(makeUnit(who, at, nth, sentence, found, bytes));
      continue;
    }
    // Cut, and so never the sentence itself: its terms are all tighten weighs it by.
    const { terms, weights } = countedTerms(sentence, bytes, found);
    const whole = { who, at, nth, text: sentence, bytes, score: 0, cue: 0, terms, weights };
    const text = tightenTo(whole, sentence, UNIT_BYTES, false);
    if (text) units.push(makeUnit(who, at, nth, text, found));
  }
  return { line, units: keepBest(units, DIGEST_UNITS), common: countsOf([units]) };
}

/**
 * What a unit is worth keeping for a parent: its score per byte it would take in a line (with a
 * head's and a separator's share), as a merge weighs it; a long sentence of many ordinary words
 * does not push out a short one that decides something.
 */
function worth(unit: Unit): number {
  return unit.score / (unit.bytes + 48);
}

/** The `max` units of highest worth (the earlier on a tie), in their order. */
function keepBest(units: Unit[], max: number): Unit[] {
  if (units.length <= max) return units;
  const ranked = units
    .map((unit, i) => ({ unit, i }))
    .sort((a, b) => worth(b.unit) - worth(a.unit) || a.i - b.i)
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
  const found = findEntities(line);
  const units: Unit[] = [];
  let nth = 0;
  let turn = -1;
  for (const idea of ideas) {
    nth = idea.turn === turn ? nth + 1 : 0;
    turn = idea.turn;
    const text = idea.sentences.join(" ").trim();
    if (!text) continue;
    const at = id + Math.floor((idea.turn * n) / Math.max(1, turns));
    // Counted once: a text that fits is what cutToBytes gives back, and makeUnit needs its bytes.
    const bytes = utf8Bytes(text);
    const who = speakerOf(idea.head);
    units.push(
      bytes <= UNIT_BYTES * 2
        ? makeUnit(who, at, nth, text, found, bytes)
        : makeUnit(who, at, nth, cutToBytes(text, UNIT_BYTES * 2), found),
    );
  }
  // Each turn of a line stands for a message it covers.
  const turnsOf = new Map<number, Unit[]>();
  for (const unit of units) {
    const turn = turnsOf.get(unit.at);
    if (turn) turn.push(unit);
    else turnsOf.set(unit.at, [unit]);
  }
  return {
    line,
    units: keepBest(units, DIGEST_UNITS * 2),
    common: countsOf([...turnsOf.values()]),
  };
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
      .sort((a, b) => worth(b) - worth(a) || a.at - b.at || a.nth - b.nth);
    let have = half.filter((u) => keep.has(u)).length;
    for (const unit of ranked) {
      if (have >= floor || keep.size >= DIGEST_UNITS) break;
      keep.add(unit);
      have++;
    }
  }
  const rest = pool
    .filter((u) => !keep.has(u))
    .sort((a, b) => worth(b) - worth(a) || a.at - b.at || a.nth - b.nth);
  for (const unit of rest) {
    if (keep.size >= DIGEST_UNITS) break;
    keep.add(unit);
  }
  return pool.filter((u) => keep.has(u));
}
