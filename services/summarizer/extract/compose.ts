import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import type { Entity } from "./entities.ts";
import type { Idea } from "./segment.ts";

/** Below this many bytes a shortened sentence no longer says anything: name the idea instead. */
const MIN_BODY = 32;
/** Share of the line the `(also: …)` list may claim before further sentences. */
const RESERVE = 0.3;
const ELLIPSIS = "…";
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
  sentences: string[];
  /** The first sentence was cut: adding later ones would read as if it had not been. */
  cut: boolean;
}

/** A sentence cut to `room` bytes at a word when one is near, marked with an ellipsis. */
export function shorten(sentence: string, room: number): string {
  if (utf8Bytes(sentence) <= room) return sentence;
  const bare = sentence.replace(/\s*\([^()]*\)/g, "");
  if (bare && utf8Bytes(bare) <= room) return bare;
  if (room <= utf8Bytes(ELLIPSIS)) return "";
  let cut = cutToBytes(bare, room - utf8Bytes(ELLIPSIS));
  const space = cut.lastIndexOf(" ");
  if (space > cut.length * 0.6) cut = cut.slice(0, space);
  cut = cut.replace(/[\s,;:–—-]+$/u, "");
  return cut ? cut + ELLIPSIS : "";
}

function render(pieces: readonly Piece[]): string {
  let out = "";
  let speaker = "";
  let previous = -2;
  for (const piece of pieces) {
    // A speaker's consecutive turns share one head: `Ana: x; y`, not `Ana: x / Ana: y`.
    const showHead = piece.head !== "" && (piece.head !== speaker || piece.idea !== previous + 1);
    const text = piece.sentences.join(" ");
    if (!text && !showHead) continue;
    if (out) out += showHead ? " / " : /[.!?。！？…:]$/u.test(out) ? " " : "; ";
    out += (showHead ? piece.head : "") + text;
    if (piece.head) speaker = piece.head;
    previous = piece.idea;
  }
  return out.trim();
}

function alsoBytes(items: readonly { text: string }[]): number {
  if (items.length === 0) return 0;
  let bytes = utf8Bytes(" (also: )");
  for (const item of items) bytes += utf8Bytes(item.text) + 2;
  return bytes - 2;
}

/** Equal shares, the smallest pieces first so what they leave goes to the larger ones. */
function waterFill(sizes: readonly number[], budget: number): number[] {
  const order = sizes.map((size, i) => ({ size, i })).sort((a, b) => a.size - b.size || a.i - b.i);
  const shares = sizes.map(() => 0);
  let left = budget;
  let count = order.length;
  for (const { size, i } of order) {
    const share = Math.min(size, Math.floor(left / count));
    shares[i] = share;
    left -= share;
    count--;
  }
  return shares;
}

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

/** A dropped idea in two or three words, so the line still says it was there. */
function label(idea: Idea, at: number): Entity {
  const words = (idea.sentences[0] ?? "")
    .replace(/[,;()]/g, "")
    .split(/\s+/)
    .slice(0, 3)
    .join(" ");
  const text = cutToBytes(`${idea.head}${words}`, 40).trim();
  return { text, kind: "carried", tier: 2, at };
}

/**
 * Builds one line of at most `limit` bytes: the first sentence of every idea that fits (cut
 * evenly when they do not), then further sentences whole, then the entities the chosen text
 * lost, then the note. Pure and deterministic.
 */
export function compose(input: ComposeInput): string {
  const { ideas, limit } = input;
  const pieceOf = (i: number): Piece => {
    const idea = ideas[i] ?? { head: "", sentences: [] };
    return { idea: i, head: idea.head, sentences: idea.sentences.slice(0, 1), cut: false };
  };
  const firsts = ideas.map((_, i) => pieceOf(i));
  const firstText = render(firsts);
  const reserveCap = Math.floor(limit * RESERVE);
  const uncoveredBy = (text: string) => input.entities.filter((e) => !text.includes(e.text));
  const noteMin = input.note ? utf8Bytes(input.note.short) + 3 : 0;
  const bodyBudget = limit - noteMin - Math.min(reserveCap, alsoBytes(uncoveredBy(firstText)));

  // Drop the least valuable ideas until every kept one can have a useful share.
  const rank = rankIdeas(ideas, input.entities, input.pinned);
  const sizeOf = (p: Piece) => utf8Bytes(p.head) + utf8Bytes(p.sentences[0] ?? "");
  const minOf = (p: Piece) => Math.min(sizeOf(p), utf8Bytes(p.head) + MIN_BODY) + SEP_BYTES;
  const kept = new Set(rank);
  let need = firsts.reduce((sum, p) => sum + minOf(p), 0);
  for (let r = rank.length - 1; r > 0 && need > bodyBudget; r--) {
    const i = rank[r] ?? 0;
    kept.delete(i);
    need -= minOf(firsts[i] ?? pieceOf(i));
  }
  const pieces = firsts.filter((p) => kept.has(p.idea));
  const shares = waterFill(
    pieces.map((p) => sizeOf(p)),
    Math.max(0, bodyBudget - SEP_BYTES * pieces.length),
  );
  pieces.forEach((p, j) => {
    const room = (shares[j] ?? 0) - utf8Bytes(p.head);
    const first = p.sentences[0] ?? "";
    const short = shorten(first, Math.max(0, room));
    if (short !== first) {
      p.cut = true;
      p.sentences = short ? [short] : [];
    }
  });

  // More sentences, round by round so every idea gets its second before any gets a third.
  let body = render(pieces);
  for (let round = 1; ; round++) {
    let added = false;
    for (const p of pieces) {
      const sentence = ideas[p.idea]?.sentences[round];
      if (p.cut || sentence === undefined || p.sentences.length !== round) continue;
      const trial = render(
        pieces.map((q) => (q === p ? { ...q, sentences: [...q.sentences, sentence] } : q)),
      );
      const reserve = Math.min(reserveCap, alsoBytes(uncoveredBy(trial)));
      if (utf8Bytes(trial) + reserve + noteMin <= limit) {
        p.sentences.push(sentence);
        body = trial;
        added = true;
      } else p.cut = true;
    }
    if (!added) break;
  }

  // What the chosen sentences lost, most exact first, listed in the order it came.
  const dropped = ideas
    .map((idea, i) => ({ idea, i }))
    .filter(({ i }) => !kept.has(i))
    .map(({ idea, i }) => label(idea, 1e9 + i));
  const candidates = [...uncoveredBy(body), ...dropped.filter((d) => !body.includes(d.text))].sort(
    (a, b) => a.tier - b.tier || a.at - b.at,
  );
  const also: Entity[] = [];
  let room = limit - utf8Bytes(body) - noteMin;
  for (const candidate of candidates) {
    if (also.some((a) => a.text.includes(candidate.text))) continue;
    const extra = alsoBytes([...also, candidate]) - alsoBytes(also);
    if (extra <= room) {
      also.push(candidate);
      room -= extra;
    }
  }
  also.sort((a, b) => a.at - b.at);
  let line = body + (also.length ? ` (also: ${also.map((a) => a.text).join(", ")})` : "");
  if (input.note) {
    const left = limit - utf8Bytes(line);
    const full = ` [${input.note.full}]`;
    if (utf8Bytes(full) <= left) line += full;
    else if (utf8Bytes(input.note.short) + 3 <= left) line += ` [${input.note.short}]`;
  }
  // The budget above already holds; this only guards the contract against a miscount.
  return utf8Bytes(line) <= limit ? line : cutToBytes(line, limit);
}
