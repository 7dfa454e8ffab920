import { Generations } from "./generations.ts";

// Words at a clause's edges that cost a line bytes and tell a later reader nothing: an opening
// interjection ("Oh wow, …", "Haha yeah …"), a closing laugh or emoji ("… lol"), and a
// speaker's name said to them ("…, Caroline!"). A merge reads a line's clauses without them, so
// the same bytes hold more of what was said. None of these words names a thing, a time or a place.

// An opening interjection or discourse marker with the marks after it, taken off one by one
// ("Oh wow! Yeah, …"). Not "actually" (it takes back what was said before) nor "no" (it answers).
const OPENER =
  /^(?:o+h+|a+h+|a+w+|wo+w+|(?:ha)+h?|(?:he)+h?|lo+l|lmf?ao|omg|ye+a+h*|yea|yes+|ye[py]|yu[py]|well|h+m+|u+m+|u+h+|ok|okay|anyways?|btw|honestly|also|so|and|but|like|man|dude|hey|hi|hello|aha|nice|cool|wait|ugh|oops|whoa|sure|right|true|damn|dang|gosh|alright)\b[\s,.!?…~-]*/i;
// A closing laugh, interjection or emoji run, with the marks before it.
const CLOSER =
  /[\s,.~-]*(?:\b(?:lo+l|(?:ha)+h?|(?:he)+h?|lmf?ao|xd|tbh)\b|:[()DPp]|(?:\p{Extended_Pictographic}|\p{Emoji_Modifier}|\u{FE0F}|\u{200D})+)+[\s!.]*$/iu;
// A capitalised word (one or two) at the end of a clause after a comma, or at its start before
// a comma or `!`: where a name is said to someone ("I met Caroline" keeps it). Only a speaker's.
const END_NAME = /^,\s*(\p{Lu}[\p{Ll}’']+(?: \p{Lu}[\p{Ll}’']+)?)([!?.]*)$/u;
const START_NAME = /^(\p{Lu}[\p{Ll}’']+)[,!]+\s+/u;

/**
 * `clause` without its filler: opening interjections, a closing laugh or emoji, and `names`
 * (the line's speakers, or the start of one: "Mel" for Melanie) said to someone at its start or
 * end. Empty when nothing else was said. Idempotent.
 */
export function dropFiller(clause: string, names: Names = []): string {
  const known = stripped.get(clause);
  if (known !== undefined) return known;
  const probe = { named: false };
  const text = strip(clause, names, probe);
  // A clause with no capitalised word where a name is said gives the same for any names.
  if (!probe.named) stripped.set(clause, text);
  return text;
}

/** dropFiller's work; `probe.named` is set when a capitalised word stood where a name is said. */
function strip(clause: string, names: Names, probe: { named: boolean }): string {
  let text = clause;
  for (let changed = true; changed;) {
    const before = text;
    const opener = OPENER.exec(text);
    if (opener && opener[0].length > 0) text = text.slice(opener[0].length);
    const start = START_NAME.exec(text);
    if (start) {
      probe.named = true;
      if (isSpeaker(start[1] as string, names)) text = text.slice(start[0].length);
    }
    // (END_NAME needs a comma: most clauses end with no name.)
    text = dropCloser(text);
    const comma = text.lastIndexOf(",");
    const end = comma >= 0 ? END_NAME.exec(text.slice(comma)) : null;
    if (end) {
      probe.named = true;
      if (isSpeaker(end[1] as string, names)) text = text.slice(0, comma) + (end[2] ?? "");
    }
    changed = text !== before;
  }
  return text.trim();
}

/**
 * Clauses stripped before, by text, when no name stood where one is said (so `names` did not
 * matter): a line's clauses are read again by every merge up the tree. Each entry is a pure
 * function of its key, so what it holds never changes a line.
 */
const STRIPPED_ENTRIES = 1 << 13;
const stripped = new Generations<string>(STRIPPED_ENTRIES);

/** Empties the memo of stripped clauses (benchmarks and tests: a process that just started). */
export function forgetStripped(): void {
  stripped.clear();
}

/** Where CLOSER is looked for: a clause's last characters (a laugh and its marks are short). */
const CLOSER_TAIL = 48;
// How a closing run can end, before its marks: a laugh's last two letters, a smiley, an emoji.
const CLOSER_END =
  /(?:ol|ha|he|ao|xd|bh|:[()dp]|\p{Extended_Pictographic}|\p{Emoji_Modifier}|\u{FE0F}|\u{200D})$/iu;

/** `text` without a closing laugh, smiley or emoji run (a `!` or `?` among its marks stays as `!`). */
function dropCloser(text: string): string {
  let end = text.length;
  while (end > 0 && " \t\n!.".includes(text[end - 1] as string)) end--;
  if (end < 2 || !CLOSER_END.test(text.slice(end - 2, end))) return text;
  const from = Math.max(0, text.length - CLOSER_TAIL);
  const match = CLOSER.exec(text.slice(from));
  if (!match) return text;
  return text.slice(0, from + match.index) + (/[!?]/.test(match[0]) ? "!" : "");
}

/** Speakers' names, or how to find them (asked only when a clause may say one to someone). */
export type Names = readonly string[] | (() => readonly string[]);

/** `word` is one of `names`, or the start of one (three letters at least). */
function isSpeaker(word: string, names: Names): boolean {
  const lower = word.toLowerCase();
  return (typeof names === "function" ? names() : names).some((name) => {
    const n = name.toLowerCase();
    return n === lower || (lower.length >= 3 && n.startsWith(lower));
  });
}
