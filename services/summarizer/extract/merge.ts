// A merged line chosen from the units of its two children's lines (their digests, digest.ts):
// the best unit of each half first (both halves are always there), then, greedily, the unit
// that adds the most weight not yet in the line per byte it costs, so a second sentence about
// the same thing loses to one about something new. Terms most of the pool shares (the thread's topic) count less than rare ones.
// Units are shown in the order said, each speaker's run under one head, turns joined by ` / `.
import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import { termsHeld, tighten } from "./digest.ts";
import type { TermCounts } from "./digest.ts";
import type { Unit } from "./units.ts";

/**
 * Bytes every unit costs on top of its text when weighed: a separator (`; `), often a head
 * (` / Ana: `). More than a unit really costs made a line prefer a few long sentences to more,
 * shorter facts (issue 46: 48 kept 19.0% of REALTALK's answers at 8×, 8 kept 20.1%).
 */
const OVERHEAD = 8;
/** A unit cut to fit keeps at least this share of its weight, or it is left out. */
const KEEP_WHEN_CUT = 0.5;
/** Smallest room worth cutting a unit into. */
const MIN_ROOM = 32;
/**
 * When the pool cannot all go in, a unit this long that fits whole goes in as its best run of
 * clauses in TRIM_TO of its bytes instead, when that run keeps TRIM_KEEP of its weight: a long
 * sentence's asides give their bytes to the next fact (issue 46).
 */
const TRIM_FROM = 100;
const TRIM_TO = 0.6;
const TRIM_KEEP = 0.8;
/** Units a line tries to trim so. */
const MAX_TRIMS = 2;
/** Units a line tries to cut to fit (after the two openings). */
const MAX_CUTS = 3;
/** How much a cue (a request, decision, outcome, plan) raises what a unit's terms are worth. */
const CUE_FACTOR = 0.5;
/**
 * What a question that asks for nothing is worth against a statement: "Have you been to
 * Italy?" names what the reply says, and the reply holds the fact (a request counts whole).
 */
const QUESTION = 0.5;
interface Pick {
  /** Index in the pool (the order said). */
  at: number;
  unit: Unit;
  text: string;
  /** UTF-8 bytes of `text`. */
  bytes: number;
}

function headOf(who: string, limit: number): string {
  const max = Math.max(0, Math.floor(limit / 4) - 2);
  const name = utf8Bytes(who) <= max ? who : cutToBytes(who, max).trim();
  return name ? `${name}: ` : "";
}

/** A speaker's head and its bytes, made once per speaker and line. */
type Heads = Map<string, { head: string; bytes: number }>;

function headIn(heads: Heads, who: string, limit: number): { head: string; bytes: number } {
  let entry = heads.get(who);
  if (!entry) {
    const head = headOf(who, limit);
    heads.set(who, (entry = { head, bytes: utf8Bytes(head) }));
  }
  return entry;
}

/**
 * What `/[.!?…:]$/u` asks of a text's last character. Not compose.ts's `endsSentence`, which also
 * knows `。！？`: each keeps the joints its lines were always made with.
 */
function endsLatinSentence(c: number): boolean {
  return c === 46 || c === 33 || c === 63 || c === 0x2026 || c === 58;
}

/**
 * Picks, in the order said (`sorted` is), as one text; a speaker's head opens each of their
 * runs. With its UTF-8 bytes, added up from its parts: each joint has ASCII on one side (a
 * separator or a head's `: `), so no two parts make one character.
 */
function render(
  sorted: readonly Pick[],
  limit: number,
  heads: Heads,
): { text: string; bytes: number } {
  let out = "";
  let bytes = 0;
  // out's last code unit (-1 while empty), so no RegExp runs on a growing string.
  let last = -1;
  let who: string | undefined;
  for (const pick of sorted) {
    if (pick.unit.who !== who) {
      const { head, bytes: headBytes } = headIn(heads, pick.unit.who, limit);
      const sep = out ? " / " : "";
      out += `${sep}${head}${pick.text}`;
      bytes += sep.length + headBytes + pick.bytes;
      if (pick.text) last = pick.text.charCodeAt(pick.text.length - 1);
      else if (head || sep) last = 32; // both end in a space
      who = pick.unit.who;
    } else {
      const sep = endsLatinSentence(last) ? " " : "; ";
      out += `${sep}${pick.text}`;
      bytes += sep.length + pick.bytes;
      last = pick.text ? pick.text.charCodeAt(pick.text.length - 1) : 32;
    }
  }
  return { text: out, bytes };
}

/**
 * The UTF-8 bytes `render` would make of `sorted`, without making the text: a merge measures
 * each pick it tries and renders only the line it keeps.
 */
function measure(sorted: readonly Pick[], limit: number, heads: Heads): number {
  let bytes = 0;
  let last = -1;
  let who: string | undefined;
  let empty = true;
  for (const pick of sorted) {
    if (pick.unit.who !== who) {
      const headBytes = headIn(heads, pick.unit.who, limit).bytes;
      const sep = empty ? 0 : 3;
      bytes += sep + headBytes + pick.bytes;
      if (pick.text) last = pick.text.charCodeAt(pick.text.length - 1);
      else if (headBytes > 0 || sep > 0) last = 32;
      if (sep + headBytes + pick.text.length > 0) empty = false;
      who = pick.unit.who;
    } else {
      bytes += (endsLatinSentence(last) ? 1 : 2) + pick.bytes;
      empty = false;
      last = pick.text ? pick.text.charCodeAt(pick.text.length - 1) : 32;
    }
  }
  return bytes;
}

/** `1 + ln(max(1, n))`, what a term said in n covered messages is divided by; small n kept. */
const DAMPING = new Float64Array(1024);
function damping(n: number): number {
  const at = Math.max(1, n);
  if (at >= DAMPING.length || !Number.isInteger(at)) return 1 + Math.log(at);
  return (DAMPING[at] ||= 1 + Math.log(at));
}

/** The merged line of at most `limit` bytes. */
export function composeMerge(
  left: readonly Unit[],
  right: readonly Unit[],
  limit: number,
  common: TermCounts = { terms: [], counts: [] },
): { text: string } {
  // The same words by the same speaker (a line read back twice, a repeated message) once.
  const seen = new SpeakerTexts([...left, ...right]);
  const pool: Unit[] = [];
  const side: number[] = [];
  for (const [s, half] of [left, right].entries()) {
    for (const unit of half) {
      if (!seen.add(unit)) continue;
      pool.push(unit);
      side.push(s);
    }
  }
  // A term's weight falls with the number of covered messages that said it (1: full weight).
  const said = new Map<string, number>();
  // And the pool's bytes as a line would join them: whether it can all go in (`trims`).
  let poolBytes = 0;
  for (const unit of pool) {
    poolBytes += unit.bytes + 2;
    for (const term of unit.terms) said.set(term, (said.get(term) ?? 0) + 1);
  }
  common.terms.forEach((term, i) =>
    said.set(term, Math.max(said.get(term) ?? 0, common.counts[i] ?? 0)),
  );
  // Per unit, once: what each term is worth here, and what the unit costs whole.
  const worth = pool.map((unit) =>
    unit.terms.map((term, i) => (unit.weights[i] as number) / damping(said.get(term) ?? 1)),
  );
  const whoBytes = new Map<string, number>();
  const cost = pool.map((unit) => {
    let bytes = whoBytes.get(unit.who);
    if (bytes === undefined) whoBytes.set(unit.who, (bytes = utf8Bytes(unit.who)));
    return unit.bytes + bytes + OVERHEAD;
  });
  const covered = new Set<string>();

  /** What unit `at` adds to the line (cut to `text` when given). */
  const gainOf = (at: number, text?: string): number => {
    const unit = pool[at] as Unit;
    const weights = worth[at] as number[];
    const lower = text?.toLowerCase();
    let sum = 0;
    for (let i = 0; i < unit.terms.length; i++) {
      const term = unit.terms[i] as string;
      if (covered.has(term) || (lower !== undefined && !lower.includes(term))) continue;
      sum += weights[i] as number;
    }
    const cue = lower !== undefined && text !== unit.text ? unit.cue / 2 : unit.cue;
    return (
      (Math.min(sum, 12) * (1 + CUE_FACTOR * cue) +
        (sum > 0 ? cue : cue / 4) +
        (unit.nth === 0 ? 0.25 : 0)) *
      (unit.cue === 0 && unit.text.endsWith("?") ? QUESTION : 1) *
      unit.voice
    );
  };
  const density = (at: number): number => gainOf(at) / (cost[at] as number);

  const picks: Pick[] = [];
  let sorted: Pick[] = [];
  const heads: Heads = new Map();
  let textBytes = 0;
  let cuts = 0;
  // Trimmed only when the pool cannot all go in: a line with room keeps its sentences whole.
  let trims = poolBytes > limit ? 0 : MAX_TRIMS;
  const take = (at: number, unitText: string): boolean => {
    const unit = pool[at] as Unit;
    const pick = {
      at,
      unit,
      text: unitText,
      bytes: unitText === unit.text ? unit.bytes : utf8Bytes(unitText),
    };
    // In the order said: where the pick goes among those taken.
    let slot = sorted.length;
    while (slot > 0 && (sorted[slot - 1] as Pick).at > at) slot--;
    const trial = [...sorted.slice(0, slot), pick, ...sorted.slice(slot)];
    const bytes = measure(trial, limit, heads);
    if (bytes > limit) return false;
    picks.push(pick);
    sorted = trial;
    textBytes = bytes;
    for (const term of termsHeld(pool[at] as Unit, unitText)) covered.add(term);
    return true;
  };
  /** Whole if it fits, else cut to the room left when that keeps enough of its weight. */
  const place = (at: number, share: number): boolean => {
    const unit = pool[at] as Unit;
    const head = headIn(heads, unit.who, limit).bytes + 3;
    if (unit.bytes >= TRIM_FROM && unit.bytes <= share && trims < MAX_TRIMS) {
      trims++;
      const cut = trimmed(unit);
      if (cut && gainOf(at, cut) >= gainOf(at) * TRIM_KEEP && take(at, cut)) return true;
    }
    if (unit.bytes <= share && textBytes + unit.bytes + 2 <= limit && take(at, unit.text))
      return true;
    const room = Math.min(share, limit - textBytes - head);
    // Cutting costs more than taking whole: a few tries a line, and only into real room.
    if (room < Math.min(MIN_ROOM, share) || cuts >= MAX_CUTS) return false;
    cuts++;
    const whole = gainOf(at);
    const cut = tighten(unit, unit.text, room);
    if (!cut || gainOf(at, cut) < whole * KEEP_WHEN_CUT) return false;
    return take(at, cut);
  };

  // Units already weighed for the line (taken or not), by pool index: flags, not a Set.
  const out = new Uint8Array(pool.length);
  // The best unit of each half, each within half the line, so both halves are represented.
  for (const s of [0, 1]) {
    let best = -1;
    let bestDensity = -1;
    for (let i = 0; i < pool.length; i++) {
      if (side[i] !== s) continue;
      const d = density(i);
      if (d > bestDensity) {
        best = i;
        bestDensity = d;
      }
    }
    if (best < 0) continue;
    out[best] = 1;
    const share = Math.floor(limit / 2) - headIn(heads, (pool[best] as Unit).who, limit).bytes - 3;
    if (!place(best, share)) {
      const cut = shortFor(pool[best] as Unit, share);
      if (cut) take(best, cut);
    }
  }
  // Then whatever adds the most per byte, until nothing more fits. A unit's gain only falls as
  // the line covers more terms, so a bound from an earlier round is checked before it is trusted.
  const bound = pool.map((_, i) => (out[i] === 1 ? -1 : density(i)));
  // The units not yet weighed, in a heap: highest bound first, the earlier on a tie (the unit
  // a scan for the highest would find first).
  const heap = new UnitHeap(bound);
  for (let i = 0; i < pool.length; i++) if (out[i] !== 1) heap.push(i);
  for (;;) {
    if (
      limit - textBytes < MIN_ROOM &&
      pool.every((u, i) => out[i] === 1 || u.bytes + 2 > limit - textBytes)
    )
      break;
    const best = heap.top();
    if (best < 0 || (bound[best] as number) <= 0) break;
    const now = density(best);
    if (now < heap.second()) {
      bound[best] = now;
      heap.lowerTop();
      continue;
    }
    heap.pop();
    out[best] = 1;
    if (now > 0) place(best, limit);
  }
  if (picks.length === 0 && pool.length > 0) {
    const unit = pool[0] as Unit;
    const cut = shortFor(unit, limit - headIn(heads, unit.who, limit).bytes);
    if (cut) take(0, cut);
  }
  // `take` keeps only a text that fits: counted already, no second count.
  const text = render(sorted, limit, heads).text;
  const line = textBytes <= limit ? text : cutToBytes(text, limit);
  return { text: line };
}

/**
 * Which (speaker, text) pairs were met, as the key `${who}\0${text}` would tell them: per speaker
 * a set of texts, so no key string is built and hashed per unit (a merge's largest cost, bench
 * e2e heavy). A speaker with a NUL could make two pairs one key: then keys, as before.
 */
class SpeakerTexts {
  readonly #byWho = new Map<string, Set<string>>();
  readonly #keys: Set<string> | undefined;

  constructor(units: readonly Unit[]) {
    this.#keys = units.some((u) => u.who.includes("\u0000")) ? new Set() : undefined;
  }

  /** Whether the pair is new (and now met). */
  add(unit: Unit): boolean {
    if (this.#keys) {
      const key = `${unit.who}\u0000${unit.text}`;
      if (this.#keys.has(key)) return false;
      this.#keys.add(key);
      return true;
    }
    let texts = this.#byWho.get(unit.who);
    if (!texts) this.#byWho.set(unit.who, (texts = new Set()));
    if (texts.has(unit.text)) return false;
    texts.add(unit.text);
    return true;
  }
}

// A unit's trimmed text, kept by its terms array (made once per text and shared by every unit
// of that text), checked against the text: found once, not by every merge that weighs it.
const trimmedOf = new WeakMap<object, { text: string; cut: string }>();

/** A long unit's best run of clauses in TRIM_TO of its bytes ("" when none). */
function trimmed(unit: Unit): string {
  const held = trimmedOf.get(unit.terms);
  if (held?.text === unit.text) return held.cut;
  const cut = tighten(unit, unit.text, Math.floor(unit.bytes * TRIM_TO));
  trimmedOf.set(unit.terms, { text: unit.text, cut });
  return cut;
}

function shortFor(unit: Unit, room: number): string {
  return room > 0 ? tighten(unit, unit.text, room) : "";
}

/** Unit indices by `bound`, highest first, the lower index first on a tie. */
class UnitHeap {
  readonly #items: number[] = [];

  constructor(readonly bound: readonly number[]) {}

  #before(a: number, b: number): boolean {
    const x = this.bound[a] as number;
    const y = this.bound[b] as number;
    return x > y || (x === y && a < b);
  }

  push(at: number): void {
    const items = this.#items;
    let i = items.length;
    items.push(at);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(at, items[parent] as number)) break;
      items[i] = items[parent] as number;
      i = parent;
    }
    items[i] = at;
  }

  /** The first, or -1. */
  top(): number {
    return this.#items.length > 0 ? (this.#items[0] as number) : -1;
  }

  /** The highest bound after the first's, and at least 0. */
  second(): number {
    const items = this.#items;
    let next = 0;
    for (const i of [1, 2])
      if (i < items.length) next = Math.max(next, this.bound[items[i] as number] as number);
    return next;
  }

  pop(): void {
    const items = this.#items;
    const last = items.pop() as number;
    if (items.length > 0) {
      items[0] = last;
      this.#down();
    }
  }

  /** The first's bound fell: it sinks to its place. */
  lowerTop(): void {
    if (this.#items.length > 1) this.#down();
  }

  #down(): void {
    const items = this.#items;
    const at = items[0] as number;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= items.length) break;
      const r = l + 1;
      const child =
        r < items.length && this.#before(items[r] as number, items[l] as number) ? r : l;
      if (!this.#before(items[child] as number, at)) break;
      items[i] = items[child] as number;
      i = child;
    }
    items[i] = at;
  }
}
