// A merged line chosen from the units its two children cover: the best unit of each half first
// (both halves are always there), then, greedily, the unit that adds the most weight not yet in
// the line per byte it costs, so a second sentence about the same thing loses to one about
// something new. Terms most of the pool shares (the thread's topic) count less than rare ones.
// Units are shown in the order said, each speaker's run under one head, turns joined by ` / `.
import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import { tighten } from "./digest.ts";
import type { Unit } from "./units.ts";

/** Bytes every unit costs on top of its text when weighed (a head, a separator, a reader's eye). */
const OVERHEAD = 48;
/** A unit cut to fit keeps at least this share of its weight, or it is left out. */
const KEEP_WHEN_CUT = 0.5;
/** Smallest room worth cutting a unit into. */
const MIN_ROOM = 32;

interface Pick {
  /** Index in the pool (the order said). */
  at: number;
  unit: Unit;
  text: string;
}

function headOf(who: string, limit: number): string {
  const max = Math.max(0, Math.floor(limit / 4) - 2);
  const name = utf8Bytes(who) <= max ? who : cutToBytes(who, max).trim();
  return name ? `${name}: ` : "";
}

/** Picks in the order said; a speaker's head opens each of their runs. */
function render(picks: readonly Pick[], limit: number): string {
  let out = "";
  let who: string | undefined;
  for (const pick of [...picks].sort((a, b) => a.at - b.at)) {
    if (pick.unit.who !== who) {
      out += `${out ? " / " : ""}${headOf(pick.unit.who, limit)}${pick.text}`;
      who = pick.unit.who;
    } else out += `${/[.!?…:]$/u.test(out) ? " " : "; "}${pick.text}`;
  }
  return out;
}

/** The merged line of at most `limit` bytes, and the units it shows. */
export function composeMerge(
  left: readonly Unit[],
  right: readonly Unit[],
  limit: number,
): { text: string; shown: Set<Unit> } {
  // The same words by the same speaker (a line read back twice, a repeated message) once.
  const seen = new Set<string>();
  const pool: Unit[] = [];
  const side: number[] = [];
  for (const [s, half] of [left, right].entries()) {
    for (const unit of half) {
      const key = `${unit.who}\u0000${unit.text}`;
      if (seen.has(key)) continue;
      seen.add(key);
      pool.push(unit);
      side.push(s);
    }
  }
  const df = new Map<string, number>();
  for (const unit of pool) for (const term of unit.terms) df.set(term, (df.get(term) ?? 0) + 1);
  const common = Math.max(3, Math.ceil(pool.length / 4));
  const covered = new Set<string>();

  const gainOf = (unit: Unit, text?: string): number => {
    const lower = text?.toLowerCase();
    let sum = 0;
    for (let i = 0; i < unit.terms.length; i++) {
      const term = unit.terms[i] as string;
      if (covered.has(term) || (lower !== undefined && !lower.includes(term))) continue;
      const weight = unit.weights[i] as number;
      sum += (df.get(term) ?? 1) >= common ? weight / 2 : weight;
    }
    const cue = lower !== undefined && text !== unit.text ? unit.cue / 2 : unit.cue;
    return Math.min(sum, 12) + (sum > 0 ? cue : cue / 4) + (unit.nth === 0 ? 0.25 : 0);
  };
  const density = (unit: Unit): number =>
    gainOf(unit) / (utf8Bytes(unit.text) + utf8Bytes(unit.who) + OVERHEAD);

  const picks: Pick[] = [];
  const out = new Set<number>();
  let text = "";
  const take = (at: number, unitText: string): boolean => {
    const trial = [...picks, { at, unit: pool[at] as Unit, text: unitText }];
    const rendered = render(trial, limit);
    if (utf8Bytes(rendered) > limit) return false;
    picks.push(trial[trial.length - 1] as Pick);
    text = rendered;
    const lower = unitText.toLowerCase();
    for (const term of (pool[at] as Unit).terms) if (lower.includes(term)) covered.add(term);
    return true;
  };
  /** Whole if it fits, else cut to the room left when that keeps enough of its weight. */
  const place = (at: number, share: number): boolean => {
    const unit = pool[at] as Unit;
    const whole = gainOf(unit);
    if (utf8Bytes(unit.text) <= share && take(at, unit.text)) return true;
    const head = utf8Bytes(headOf(unit.who, limit)) + 3;
    const room = Math.min(share, limit - utf8Bytes(text) - head);
    if (room < Math.min(MIN_ROOM, share)) return false;
    const cut = tighten(unit, unit.text, room);
    if (!cut || gainOf(unit, cut) < whole * KEEP_WHEN_CUT) return false;
    return take(at, cut);
  };

  // The best unit of each half, each within half the line, so both halves are represented.
  for (const s of [0, 1]) {
    let best = -1;
    for (let i = 0; i < pool.length; i++) {
      if (side[i] !== s) continue;
      if (best < 0 || density(pool[i] as Unit) > density(pool[best] as Unit)) best = i;
    }
    if (best < 0) continue;
    out.add(best);
    const share = Math.floor(limit / 2) - utf8Bytes(headOf((pool[best] as Unit).who, limit)) - 3;
    if (!place(best, share)) {
      const cut = shortFor(pool[best] as Unit, share);
      if (cut) take(best, cut);
    }
  }
  // Then whatever adds the most per byte, until nothing more fits.
  for (;;) {
    let best = -1;
    let bestDensity = 0;
    for (let i = 0; i < pool.length; i++) {
      if (out.has(i)) continue;
      const d = density(pool[i] as Unit);
      if (d > bestDensity) {
        best = i;
        bestDensity = d;
      }
    }
    if (best < 0) break;
    out.add(best);
    place(best, limit);
  }
  if (picks.length === 0 && pool.length > 0) {
    const unit = pool[0] as Unit;
    const cut = shortFor(unit, limit - utf8Bytes(headOf(unit.who, limit)));
    if (cut) take(0, cut);
  }
  return { text: cutToBytes(text, limit), shown: new Set(picks.map((p) => p.unit)) };
}

function shortFor(unit: Unit, room: number): string {
  return room > 0 ? tighten(unit, unit.text, room) : "";
}
