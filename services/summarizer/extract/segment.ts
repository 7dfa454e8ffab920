import { cutToBytes } from "../../../shared/bytes.ts";
import { dropFiller, type Names } from "./filler.ts";
import { COMMON_WORDS } from "./lexicon.ts";

/** A unit of meaning: a paragraph or list item of a message, or one speaker's turn in a line. */
export interface Idea {
  /** Who said it, `Ana → Bo: `, shown once before the first idea kept of each turn; or "". */
  head: string;
  /** Ideas of one turn share a speaker; a new turn starts a new ` / ` part of the line. */
  turn: number;
  sentences: string[];
}

const BOUNDARY = /[.!?…]+["'”’)\]]*\s+|[。！？]+\s*/gu;
// Periods that end an abbreviation or an initial, not a sentence: the words, and the period.
const ABBREVIATED = String.raw`(?:e\.g|i\.e|etc|vs|cf|approx|incl|Mr|Mrs|Ms|Dr|Prof|St|No|Fig|Inc|Ltd|Jr|Sr|\p{Lu})\.$`;
/** A sentence that ends in one, at its start or after a space or `(`. */
const ABBREVIATION = new RegExp(String.raw`(?:^|[\s(])` + ABBREVIATED, "u");
// ABBREVIATION without its `^`, for a sentence's last ABBREVIATION_TAIL code units: a match is at
// most 8 long (a space, "approx", the period), so a longer sentence is tested by its end alone
// instead of at every position.
const ABBREVIATED_END = new RegExp(String.raw`[\s(]` + ABBREVIATED, "u");
const ABBREVIATION_TAIL = 16;

export function abbreviated(sentence: string): boolean {
  return sentence.length <= ABBREVIATION_TAIL
    ? ABBREVIATION.test(sentence)
    : ABBREVIATED_END.test(sentence.slice(-ABBREVIATION_TAIL));
}

/** Sentences of a paragraph, punctuation kept; "; " also ends one when `semicolons` is set. */
export function splitSentences(text: string, semicolons = false): string[] {
  const out: string[] = [];
  let start = 0;
  for (const match of text.matchAll(BOUNDARY)) {
    const end = match.index + match[0].trimEnd().length;
    const next = text[match.index + match[0].length];
    if (next === undefined) break;
    if (/\p{Ll}/u.test(next)) continue;
    const sentence = text.slice(start, end);
    if (abbreviated(sentence)) continue;
    out.push(sentence);
    start = match.index + match[0].length;
  }
  out.push(text.slice(start));
  const cleaned = out.map((s) => s.trim()).filter((s) => s.length > 0);
  if (!semicolons) return cleaned;
  return cleaned.flatMap((s) =>
    s
      .split(/;\s+/)
      .map((part) => part.trim())
      .filter((part) => part.length > 0),
  );
}

// Markdown that costs bytes and says nothing in a one-line summary.
const MARKER = /^\s*(?:#{1,6}\s+|[-*+•]\s+(?:\[[ xX]\]\s+)?|\d{1,3}[.)]\s+|>\s?)/;
// Whitespace the fold below changes: a run, or one that is not a space. Prose has neither, and
// replacing each of its spaces with a space made a new string (bench e2e heavy).
const UNFOLDED = /\s\s|[^\S ]/;
function plain(line: string): string {
  // Each RegExp only on a line holding what it needs literally: prose has none of them.
  let bare = line;
  if (bare.includes("**") || bare.includes("__") || bare.includes("~~"))
    bare = bare.replace(/\*\*|__|~~/g, "");
  if (bare.includes("`")) bare = bare.replace(/`([^`]*)`/g, "$1");
  if (bare.includes("](")) bare = bare.replace(/\[([^\]]+)\]\((\S+?)\)/g, "$1 ($2)");
  return (UNFOLDED.test(bare) ? bare.replace(/\s+/g, " ") : bare).trim();
}

function codeIdea(lang: string, firstLine: string): Idea {
  return {
    head: "",
    turn: 0,
    sentences: [`code${lang ? ` (${lang})` : ""}: ${cutToBytes(firstLine, 80)}`],
  };
}

/** A message's text as ideas: paragraphs, list items, headings; a code block is one idea. */
export function textIdeas(text: string): Idea[] {
  const ideas: Idea[] = [];
  let paragraph: string[] = [];
  const flush = () => {
    const joined = plain(paragraph.join(" "));
    if (joined) ideas.push({ head: "", turn: 0, sentences: splitSentences(joined) });
    paragraph = [];
  };
  let code: { lang: string; first: string } | undefined;
  for (const raw of (text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text).split("\n")) {
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(raw);
    if (code) {
      if (fence) {
        ideas.push(codeIdea(code.lang, code.first));
        code = undefined;
      } else if (!code.first && raw.trim()) code.first = raw.trim();
      continue;
    }
    if (fence) {
      flush();
      code = { lang: fence[2] ?? "", first: "" };
      continue;
    }
    const line = raw.trim();
    if (!line) {
      flush();
      continue;
    }
    const table = line.startsWith("|");
    const body = table
      ? line
          .split("|")
          .map((cell) => cell.trim())
          .filter((cell) => cell && !/^:?-+:?$/.test(cell))
          .join(", ")
      : line.replace(MARKER, "");
    const startsNew = table || MARKER.test(line);
    const last = paragraph[paragraph.length - 1];
    if (startsNew || (last !== undefined && /[.!?:。！？]$/.test(last))) flush();
    if (body) paragraph.push(body);
    if (table) flush();
  }
  if (code) ideas.push(codeIdea(code.lang, code.first));
  flush();
  return ideas;
}

// A turn of a line starts with who said it: `Ana: ` or `Ana → Bo: `.
const HEAD = /^([^\s:/][^:/]{0,80}?: )/;
const TURN_SPLIT = / \/ (?=[^\s:/][^:/]{0,80}?: )/;
const ALSO = /\s*\(also: ([^()]*)\)\s*$/;

/**
 * A summary line back into its turns and the items it listed as `(also: …)`, so a merge can
 * re-weigh them instead of cutting the line's end. Each clause of a turn is an idea of its own:
 * a line is already one sentence per idea, and a merge must choose among them.
 */
export function lineIdeas(
  line: string,
  firstTurn = 0,
): { ideas: Idea[]; carried: string[]; turns: number } {
  const ideas: Idea[] = [];
  const carried: string[] = [];
  let turn = firstTurn;
  const parts = line.split(TURN_SPLIT);
  // Found only when a clause may say a name to someone: few do.
  let found: string[] | undefined;
  const names = (): string[] => (found ??= speakerNames(parts));
  for (const part of parts) {
    let body = part.trim();
    // ALSO needs its opening literally: most turns have none, and the RegExp tries every space.
    const also = body.includes("(also: ") ? ALSO.exec(body) : null;
    if (also) {
      for (const item of (also[1] ?? "").split(", ")) if (item.trim()) carried.push(item.trim());
      body = body.slice(0, also.index).trim();
    }
    const head = HEAD.exec(body)?.[1] ?? "";
    body = body.slice(head.length).trim();
    const clauses = splitSentences(body, true)
      .flatMap(shortClauses)
      .map((clause) => kept(clause, names))
      .filter((clause) => clause !== "");
    if (clauses.length === 0 && head) clauses.push("");
    for (const clause of clauses) ideas.push({ head, turn, sentences: clause ? [clause] : [] });
    turn++;
  }
  return { ideas, carried, turns: turn - firstTurn };
}

/**
 * A clause as a merge reads it (dropFiller), or "" when it is a bare pleasantry with its filler
 * or without ("Hey Emily!" is one before its "Hey" is dropped, "Wow, so cool, Mel!" after).
 */
function kept(clause: string, names: Names): string {
  const text = dropFiller(clause, names);
  if (text === "" || pleasantry(text) || (text !== clause && pleasantry(clause))) return "";
  return text;
}

/** The words of the names in a line's heads (`Ana → Bo: `): who may be spoken to by name. */
function speakerNames(parts: readonly string[]): string[] {
  const names = new Set<string>();
  for (const part of parts) {
    const head = HEAD.exec(part.trim())?.[1];
    if (head)
      for (const word of head.replace(/:\s*$/, "").split(/\s+|→/)) if (word) names.add(word);
  }
  return [...names];
}

const CLAUSE_BREAK = /(?<=,)\s+|\s+(?=[—–]\s)/u;
/** A list's last item, which stays with the items before it. */
const LIST_END = /^(?:and|or|&) /i;

/**
 * A sentence's clauses, for a merge to choose among: a line's `, ` can join a fact to filler.
 * A piece too short to read alone, or a list's last item, stays with the piece before it.
 */
function shortClauses(sentence: string): string[] {
  // Most sentences have no comma or dash: no RegExp for them.
  if (!sentence.includes(",") && !sentence.includes("—") && !sentence.includes("–"))
    return [sentence];
  const parts = sentence.split(CLAUSE_BREAK);
  if (parts.length === 1) return parts;
  const out: string[] = [];
  let item = false;
  for (const part of parts) {
    const last = out.length - 1;
    // "and Faro" after "Lisbon," ends a list; after a clause, "and" opens one of its own.
    if (last >= 0 && (short(part) || short(out[last] as string) || (item && LIST_END.test(part))))
      out[last] = `${out[last]} ${part}`;
    else out.push(part);
    item = short(part);
  }
  // A clause shown alone, or before another's "; ", ends without its comma.
  return out.map((clause) => (clause.endsWith(",") ? clause.slice(0, -1) : clause));
}

/** Fewer than four words. */
function short(text: string): boolean {
  let spaces = 0;
  for (let at = text.indexOf(" "); at >= 0 && spaces < 3; at = text.indexOf(" ", at + 1)) spaces++;
  return spaces < 3;
}

// Words that greet, thank, agree or exclaim: a sentence of only these (and everyday words, or a
// name after a greeting) tells a later reader nothing.
const CHATTER = new Set(
  `hi hello hey heya wow oh ooh ah aw aww haha hahaha lol yay omg thanks thank yes yeah yep no nope
  ok okay sure cool nice great awesome amazing congrats congratulations bye morning afternoon
  evening night good welcome glad sorry please hmm um uh`.split(/\s+/),
);

/**
 * A bare acknowledgement or pleasantry: "Hey Emily!", "That sounds great!", "Yes I have!". A
 * sentence with a digit, a word outside everyday English, or more than eight words is not.
 */
export function pleasantry(sentence: string): boolean {
  // Eight spaces make nine words at least: most sentences are ruled out without a RegExp.
  let spaces = 0;
  for (let at = sentence.indexOf(" "); at >= 0; at = sentence.indexOf(" ", at + 1))
    if (++spaces >= 8) return false;
  if (/\p{N}/u.test(sentence)) return false;
  const words = sentence.toLowerCase().match(/[\p{L}][\p{L}'’]*/gu) ?? [];
  if (words.length > 8) return false;
  if (words.length === 0) return true;
  // A greeting's name ("Hey Emily!") is who it is said to, not what was said.
  if (words.length <= 3 && CHATTER.has(words[0] as string)) return true;
  return words.every((w) => CHATTER.has(w) || COMMON_WORDS.has(w.replace(/['’]s$/, "")));
}
