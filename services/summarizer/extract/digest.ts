// A node's digest: its line read back as units (each clause of each turn, with who said it and
// what it weighs) and the terms its turns say most. A merge chooses its line from its two
// children's digests. A digest is a pure function of the line and the node's name, never of
// what a process remembers: so a node's line is a pure function of the messages it covers and
// the settings, the same after a restart, on another instance, in a replay and on any number of
// summarizer threads (docs/summarizers.md, "Deterministic"). Caches (the summarizer's held
// digests, the memo of weighed clauses below) only make it sooner.
import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import { ELLIPSIS_BYTES, shorten, trimEndMarks } from "./compose.ts";
import { Generations } from "./generations.ts";
import { lineIdeas } from "./segment.ts";
import { clauseSpans, makeUnit, type Unit } from "./units.ts";

export interface Digest {
  /** The line the digest was read from: a merge uses a digest only for the line it names. */
  line: string;
  units: Unit[];
  /**
   * The terms said in most of the turns of the line (each turn stands for a message it
   * covers), with in how many (the most frequent COMMON_TERMS): a term the whole stretch keeps
   * saying tells little about any one sentence, one said once tells a lot.
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

/** Units a digest keeps, at most (a line seldom has more clauses). */
export const DIGEST_UNITS = 32;
/** A clause read from a line is cut to this many bytes at most (a line's limit may be large). */
export const UNIT_BYTES = 560;

/**
 * `text` in at most `room` bytes: the run of clauses that carries the most terms, marked `…`
 * where it was cut; a single clause too long is cut at a word. Empty when nothing fits. Each
 * clause's bytes and terms are found once; only the chosen run is put together.
 */
export function tighten(unit: Unit, text: string, room: number): string {
  const whole = text === unit.text ? unit.bytes : utf8Bytes(text);
  if (whole <= room) return text;
  const key: object = coreOf(unit) ?? unit;
  let clauses = text === unit.text ? clausesOfUnit.get(key) : undefined;
  if (!clauses) {
    clauses = readClauses(unit, text, whole === text.length);
    if (text === unit.text) clausesOfUnit.set(key, clauses);
  }
  return bestRun(unit, text, room, clauses);
}

/** A text's clauses as tighten weighs them: offsets, UTF-8 bytes, terms held (by index). */
interface Clauses {
  spans: number[];
  bytes: number[];
  held: number[][];
}

// A unit's own text is cut again by every merge up the tree that shows it: its clauses are read
// once, kept by the core it was made from (each line's units are new, their cores shared: the
// same text, terms and weights). Never changed once made, so an entry holds as long as it lives.
const clausesOfUnit = new WeakMap<object, Clauses>();

/** The run of `clauses` of `text` that carries the most of `unit`'s terms in `room` bytes. */
function bestRun(unit: Unit, text: string, room: number, clauses: Clauses): string {
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

/**
 * The most frequent `max` of `counts`, most first; of the terms said as often as the last one
 * kept, those first in code-unit order (a plain sort's), so which are kept does not depend on
 * the order they were met in. Within a count kept whole, terms stay in the order met: readers
 * of a TermCounts take it as a set of counts, and sorting every count's terms was most of what
 * counting cost a merge.
 */
function topCounts(counts: Map<string, number>, max: number): TermCounts {
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
    let group = byCount.get(count) as string[];
    // Only a count that does not fit whole is chosen among: by term.
    if (terms.length + group.length > max) group = group.sort();
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
  for (const side of [a, b]) {
    const { terms, counts } = side;
    for (let i = 0; i < terms.length; i++) {
      const term = terms[i] as string;
      sum.set(term, (sum.get(term) ?? 0) + (counts[i] ?? 0));
    }
  }
  return topCounts(sum, COMMON_TERMS);
}

/**
 * What a unit is worth keeping: its score per byte it would take in a line (with a head's and a
 * separator's share), as a merge weighs it.
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
 * A node's digest, read from its line alone: each clause of each turn is a unit, its position
 * estimated from where the turn stands in the line. An `(also: …)` list is dropped. A pure
 * function of the line and its name: the same in every process and thread, whatever any cache
 * holds. `known`: digests whose units may stand in the line (its children's, for a merged
 * line): a clause that is one of theirs is not weighed again.
 */
export function lineDigest(
  line: string,
  id: number,
  n: number,
  known: readonly Digest[] = [],
): Digest {
  const { ideas, turns } = lineIdeas(line);
  const units: Unit[] = [];
  let nth = 0;
  let turn = -1;
  let who = "";
  for (const idea of ideas) {
    nth = idea.turn === turn ? nth + 1 : 0;
    if (idea.turn !== turn) who = speakerOf(idea.head);
    turn = idea.turn;
    const said = idea.sentences.join(" ").trim();
    if (!said) continue;
    const at = id + Math.floor((idea.turn * n) / Math.max(1, turns));
    const core = weighed.get(said, known);
    const unit: LineUnit = {
      who,
      at,
      nth,
      text: core.text,
      bytes: core.bytes,
      // A turn's opening scores a little more, as makeUnit scores a message's.
      score: nth === 0 ? core.score + OPENING : core.score,
      cue: core.cue,
      voice: core.voice,
      terms: core.terms,
      weights: core.weights,
      core,
    };
    units.push(unit);
  }
  return { line, units: keepBest(units, DIGEST_UNITS), common: turnCounts(units) };
}

/**
 * The terms of a line's units, counted where each turn stands for a message it covers: its
 * units (in the order said, so by position) grouped by their estimated position, a term counted
 * once per group.
 */
function turnCounts(units: readonly Unit[]): TermCounts {
  const counts = new Map<string, number>();
  // A unit's terms are each said once in it: a group of one unit needs no set.
  let said: Set<string> | undefined;
  for (let i = 0; i < units.length; i++) {
    const unit = units[i] as Unit;
    const opens = (units[i - 1]?.at ?? Number.NaN) !== unit.at;
    const closes = (units[i + 1]?.at ?? Number.NaN) !== unit.at;
    if (opens) said = closes ? undefined : new Set();
    for (const term of unit.terms) {
      if (said) {
        if (said.has(term)) continue;
        said.add(term);
      }
      counts.set(term, (counts.get(term) ?? 0) + 1);
    }
  }
  return topCounts(counts, COMMON_TERMS);
}

/**
 * What a clause's text alone decides, as makeUnit weighs it (not as an opening): its text (cut
 * when too long), bytes, terms, cue and score.
 */
interface UnitCore extends Pick<
  Unit,
  "text" | "bytes" | "score" | "cue" | "voice" | "terms" | "weights"
> {
  /** The clause as read from the line, before any cut: the key it is known by. */
  said: string;
  /** termsHeld of its text, once asked. */
  held?: readonly string[];
}

/** What makeUnit adds to the score of a message's opening sentence (its `nth` 0). */
const OPENING = 0.25;

function weigh(said: string): UnitCore {
  const bytes = utf8Bytes(said);
  const unit =
    bytes <= UNIT_BYTES
      ? makeUnit("", 0, 1, said, undefined, bytes)
      : makeUnit("", 0, 1, cutToBytes(said, UNIT_BYTES));
  const { text, score, cue, voice, terms, weights } = unit;
  return { said, text, bytes: unit.bytes, score, cue, voice, terms, weights };
}

/**
 * The terms of `unit` that `text` (the unit's text, or a cut of it) holds, lower-cased: what a
 * line showing it covers. For the unit's own text, found once per core.
 */
export function termsHeld(unit: Unit, text: string): readonly string[] {
  const core = text === unit.text ? coreOf(unit) : undefined;
  if (core?.held) return core.held;
  const lower = text.toLowerCase();
  const held = unit.terms.filter((term) => lower.includes(term));
  if (core) core.held = held;
  return held;
}

/** A unit lineDigest made, with the core it was made from (its text, terms and weights). */
interface LineUnit extends Unit {
  readonly core: UnitCore;
}

/** The core a unit was made from, when lineDigest made it. */
function coreOf(unit: Unit): UnitCore | undefined {
  return (unit as Partial<LineUnit>).core;
}

/** The core `digests` made a unit of `said` from; undefined if none. */
function knownCore(digests: readonly Digest[], said: string): UnitCore | undefined {
  for (const digest of digests) {
    for (const unit of digest.units) {
      const core = coreOf(unit);
      if (core && core.said === said) return core;
    }
  }
  return undefined;
}

/**
 * Clauses already weighed, by text. Each entry is a pure function of its key, so what the memo
 * holds never changes a digest, only how soon it is made. Two generations: the younger fills up
 * to MEMO_ENTRIES, then becomes the older one.
 */
const MEMO_ENTRIES = 1 << 13;

class Memo {
  readonly #held = new Generations<UnitCore>(MEMO_ENTRIES);

  /** The core of `said`: held, one of `known`'s, or weighed now (then held). */
  get(said: string, known: readonly Digest[]): UnitCore {
    const held = this.#held.get(said);
    if (held) return held;
    const core = (known.length > 0 ? knownCore(known, said) : undefined) ?? weigh(said);
    this.#held.set(said, core);
    return core;
  }

  clear(): void {
    this.#held.clear();
  }
}

const weighed = new Memo();

/** Empties the memo of weighed clauses (benchmarks and tests: a process that just started). */
export function forgetWeighed(): void {
  weighed.clear();
}
