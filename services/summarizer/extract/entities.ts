// The exact tokens a reader cannot guess back from a paraphrase: they are what the extractive
// summarizer keeps first when it must leave words out.

/** Lower tiers are kept first when the line has no room for all. */
export type EntityKind = "carried" | "url" | "email" | "path" | "id" | "date" | "number" | "name";

export interface Entity {
  text: string;
  kind: EntityKind;
  tier: 1 | 2 | 3;
  /** Code-unit offset of the first occurrence, to list entities in the text's order. */
  at: number;
}

const MONTH =
  "(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)";
const EXT =
  "(?:tsx?|jsx?|mjs|cjs|json|md|txt|py|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|php|sh|bash|ya?ml|toml|ini|cfg|conf|env|lock|sql|csv|tsv|xml|html?|css|scss|svg|png|jpe?g|gif|pdf|log|zip|gz|tar|tgz|docx?|xlsx?|pptx?|wasm|proto)";
// A capitalised word, hyphenated parts allowed ("Jean-Luc"), never the start of a token such as
// "BILL-4821" that a later alternative names better.
const NAME_WORD = String.raw`\p{Lu}[\p{L}\p{M}'’]*(?:-\p{L}[\p{L}\p{M}'’]*)*(?![\p{L}\p{N}_-])`;
const TLD = "(?:com|org|net|io|dev|ai|app|co|de|fr|uk|eu|gov|edu)";

// One pass, alternatives in priority order: the first that matches at a position names it. Each
// alternative is capture group i + 1 of KINDS[i] (numbered, not named: no groups object per match).
export const PATTERN = new RegExp(
  [
    String.raw`(\bhttps?:\/\/[^\s<>"'\x60)\]]+)`,
    String.raw`(\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+)`,
    String.raw`(\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|\b${MONTH}\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?\b|\b\d{1,2} ${MONTH}(?: \d{4})?\b|\b\d{1,2}:\d{2}(?::\d{2})?(?: ?[ap]m)?\b|\b(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day\b)`,
    String.raw`((?<![\w.\/])(?:~|\.{1,2})?\/[\w@.+-]+(?:\/[\w@.+-]+)*\/?|\b[\w@.+-]+(?:\/[\w@.+-]+)+\.${EXT}\b|\b[\w.-]+\/[\w.-]+\/[\w@./+-]+|\b[\w-]+(?:\.[\w-]+)*\.${EXT}\b|\b[\w-]+(?:\.[\w-]+)*\.${TLD}\b)`,
    String.raw`(#\d+\b|\b[A-Z][A-Z0-9]{1,9}-\d+\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{7,40}\b|(?<![\w.-])[A-Za-z][\w-]*\d[\w-]*\b|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[0-9]*\b)`,
    String.raw`([$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?[kKmMbB]n?)?|\bv?\d+(?:\.\d+){2,3}\b|-?\b\d[\d,]*(?:\.\d+)?(?:\s?(?:%|[kKMGT]i?B|KB|ms|µs|ns|s|sec|min|h|hrs?|days?|x|USD|EUR|GBP|k|M|bn)\b|%)?)`,
    String.raw`(${NAME_WORD}(?: (?:(?:de|van|von|da|del|la|le|of) )?${NAME_WORD})*)`,
  ].join("|"),
  "gu",
);

// PATTERN anchored at one position: entityMatches tries it only where a match can start.
const AT = new RegExp(PATTERN.source, "uy");

// Capitalised for grammar, not because they name anything.
const COMMON = new Set(
  `I I'm I've I'll I'd Im Ive Ill Id OK Okay Yes No Not Please Thanks Thank Hi Hello Hey Dear Also And But Or So Then
  The A An This That These Those There Here It Its We Our You Your He She They Their My Me Us What When Where
  Why How Which Who If Else Let Now Just Maybe Sure Great Good Done Note Sorry Well Ok Yeah Yep Nope
  To In On At For From With By As Of Is Are Was Were Be Been Do Does Did Can Could Should Would Will May Might
  Must After Before Because Since Once While Every Each All Some Any One Two Three First Second Next Last
  Today Tomorrow Yesterday`.split(/\s+/),
);

/** Capitalised for grammar, its apostrophe typed either way ("I’m" as "I'm"). */
function grammatical(word: string): boolean {
  return COMMON.has(word.includes("’") ? word.replaceAll("’", "'") : word);
}

function isSentenceStart(text: string, at: number): boolean {
  for (let i = at - 1; i >= 0; i--) {
    const c = text[i] ?? "";
    if (c === " " || c === "\t" || c === '"' || c === "“" || c === "(" || c === "*" || c === "_") {
      continue;
    }
    return /[.!?:;\n\r。！？—-]/.test(c);
  }
  return true;
}

/**
 * A capitalised run that names something, with any grammatical word taken off its ends: "The
 * Beatles" names the Beatles, "Dua Lipa I" Dua Lipa, and "Personally I" at a sentence's start
 * no one (it is one word capitalised for grammar once its "I" is off).
 */
function nameOf(raw: string, text: string, at: number): string | undefined {
  const words = raw.split(/\s+/);
  const count = words.length;
  while (words.length > 0 && grammatical(words[0] ?? "")) words.shift();
  const trimmed = words.length !== count;
  while (words.length > 0 && grammatical(words.at(-1) ?? "")) words.pop();
  if (words.length === 0) return undefined;
  const name = words.join(" ");
  const first = words[0] ?? "";
  const innerCapital = /^\p{Lu}.*\p{Lu}/u.test(first);
  if (words.length === 1 && !innerCapital && !trimmed && isSentenceStart(text, at)) {
    return undefined;
  }
  if (name.length < 2) return undefined;
  return name;
}

function numberWorthKeeping(text: string): boolean {
  // A lone small count ("2 files") says little; anything longer, with a unit or a sign, does.
  return /\d{2,}|[$€£¥%.,]|[a-zA-Zµ]/.test(text);
}

const TIER: Record<EntityKind, 1 | 2 | 3> = {
  carried: 1,
  url: 1,
  email: 1,
  path: 1,
  id: 1,
  date: 1,
  number: 2,
  name: 2,
};

/** The characters the replace below takes off a match's end (`.,;:!?'"’)`). */
const TRAILING_MARKS = new Set([...".,;:!?'\"’)"].map((c) => c.charCodeAt(0)));

const KINDS: readonly EntityKind[] = ["url", "email", "date", "path", "id", "number", "name"];

/**
 * PATTERN's matches in `text`, as `text.matchAll(PATTERN)` gives them, but tried only at the
 * positions mayStart lets through: trying the big alternation at every position was the
 * summarizer's largest cost (bench e2e heavy), and most positions are inside plain words.
 */
export function* entityMatches(text: string): Generator<RegExpExecArray> {
  let i = 0;
  for (let match = matchFrom(text, i); match; match = matchFrom(text, i)) {
    i = AT.lastIndex; // before the yield: the caller may search meanwhile
    yield match;
  }
}

/**
 * The first match of PATTERN at or after `i` (AT.lastIndex is then its end), or null: one
 * step of entityMatches, for a caller that needs no generator (findEntities, per message).
 */
function matchFrom(text: string, i: number): RegExpExecArray | null {
  const n = text.length;
  while (i < n) {
    const skip = mayStart(text, i);
    if (skip > 0) {
      i = skip;
      continue;
    }
    AT.lastIndex = i;
    const match = AT.exec(text);
    if (match) return match;
    i += isPair(text, i) ? 2 : 1; // as a global `u` search steps: by code point
  }
  return null;
}

function isPair(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  const next = text.charCodeAt(i + 1);
  return c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
}

// What mayStart asks of an ASCII character, one table look-up instead of ranges and sets.
/** `[A-Za-z0-9_]`: `\w` and `\b` of a `u` RegExp without `i`. */
const WORD = 1;
const LOWER = 2;
/** Starts an alternative of PATTERN wherever it stands: a capital, `. + - @ ~ / # $`. */
const START = 4;
/** May follow a plain lower-case word: no alternative of PATTERN continues over it. */
const END = 8;
const ASCII = new Uint8Array(128);
const mark = (chars: string, flag: number) => {
  for (const c of chars) ASCII[c.charCodeAt(0)] = (ASCII[c.charCodeAt(0)] ?? 0) | flag;
};
mark("abcdefghijklmnopqrstuvwxyz", WORD | LOWER);
mark("ABCDEFGHIJKLMNOPQRSTUVWXYZ", WORD | START);
mark("0123456789_", WORD);
mark(".+-@~/#$", START);
mark(" \t\n\r,;!?)]\"'", END);

function has(c: number, flag: number): boolean {
  return c < 128 && ((ASCII[c] as number) & flag) !== 0;
}

/**
 * 0 when a match of PATTERN may start at `i`; else the next position worth looking at. Every
 * alternative starts with a START character, a non-ASCII one (`€£¥`, `\p{Lu}`), or a `\w` at a
 * `\b`. Of the last, a run of `[a-z]` followed by an END or the end of the text matches none:
 * each needs a digit, a capital, one of `_ . / @ : -` or more letters after it (checked by
 * test/summarizer-fast-paths.unit.test.ts).
 */
function mayStart(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c >= 0x80 || has(c, START)) return 0;
  if (!has(c, WORD) || (i > 0 && has(text.charCodeAt(i - 1), WORD))) return i + 1;
  if (!has(c, LOWER)) return 0;
  let end = i + 1;
  while (end < text.length && has(text.charCodeAt(end), LOWER)) end++;
  return end === text.length || has(text.charCodeAt(end), END) ? end : 0;
}

/** Every entity in `text`, first occurrence only, in order of appearance. */
export function findEntities(text: string, offset = 0): Entity[] {
  const seen = new Set<string>();
  // Capitalised runs already named: nameOf gives the same name again (in seen) or none.
  const named = new Set<string>();
  const found: Entity[] = [];
  // Nothing in the loop searches with AT: its lastIndex is still the match's end.
  for (let match = matchFrom(text, 0); match; match = matchFrom(text, AT.lastIndex)) {
    let g = 1;
    while (g <= KINDS.length && match[g] === undefined) g++;
    const kind = KINDS[g - 1];
    if (kind === undefined) continue;
    const raw = match[g] ?? "";
    // Trailing punctuation off; most matches end in none (no new string then).
    let value = TRAILING_MARKS.has(raw.charCodeAt(raw.length - 1))
      ? raw.replace(/[.,;:!?'"’)]+$/u, "")
      : raw;
    if (kind === "name") {
      if (named.has(value)) continue;
      const name = nameOf(value, text, match.index);
      if (name === undefined) continue;
      named.add(value);
      value = name;
    } else if (kind === "number" && !numberWorthKeeping(value)) continue;
    else if (kind === "id" && COMMON.has(value)) continue;
    if (value.length < 2 || seen.has(value)) continue;
    seen.add(value);
    found.push({ text: value, kind, tier: TIER[kind], at: offset + match.index });
  }
  return found;
}
