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
  let text = clause;
  // Each RegExp only where its match could start: most clauses have nothing to drop.
  for (let changed = true; changed;) {
    const before = text;
    const opener = OPENER.exec(text);
    if (opener && opener[0].length > 0) text = text.slice(opener[0].length);
    const start = mayStartWithName(text) ? START_NAME.exec(text) : null;
    if (start && isSpeaker(start[1] as string, names)) text = text.slice(start[0].length);
    text = dropCloser(text);
    const comma = text.lastIndexOf(",");
    const end = comma >= 0 ? END_NAME.exec(text.slice(comma)) : null;
    if (end && isSpeaker(end[1] as string, names)) text = text.slice(0, comma) + (end[2] ?? "");
    changed = text !== before;
  }
  return text.trim();
}

/**
 * Whether START_NAME may match: a capitalised word then `,` or `!` (an ASCII text is read by
 * its character codes; any other is left to the RegExp).
 */
function mayStartWithName(text: string): boolean {
  const first = text.charCodeAt(0);
  if (first >= 0x80) return true;
  if (first < 65 || first > 90) return false;
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c >= 97 && c <= 122) || c === 39 || c === 0x2019) continue;
    return i > 1 && (c === 44 || c === 33);
  }
  return false;
}

/** Where CLOSER is looked for: a clause's last characters (a laugh and its marks are short). */
const CLOSER_TAIL = 48;
// An emoji's last code units, for a text that ends in one.
const EMOJI_END = /(?:\p{Extended_Pictographic}|\p{Emoji_Modifier}|\u{FE0F}|\u{200D})$/u;

/**
 * Whether a closing run may end at `end`: a laugh's last two letters (`lol`, `haha`, `hehe`,
 * `lmao`, `xd`, `tbh`), a smiley (`:)`, `:(`, `:D`, `:p`) or an emoji.
 */
function mayClose(text: string, end: number): boolean {
  const last = text.charCodeAt(end - 1);
  if (last >= 0x80) return EMOJI_END.test(text.slice(Math.max(0, end - 2), end));
  // `| 0x20` lower-cases an ASCII letter and maps no other character onto one.
  const a = last | 0x20;
  const b = text.charCodeAt(end - 2) | 0x20;
  if (b === 58) return a === 41 || a === 40 || a === 100 || a === 112; // : ) ( d p
  return (
    (b === 111 && a === 108) || // ol
    (b === 104 && (a === 97 || a === 101)) || // ha, he
    (b === 97 && a === 111) || // ao
    (b === 120 && a === 100) || // xd
    (b === 98 && a === 104) // bh
  );
}

/** `text` without a closing laugh, smiley or emoji run (a `!` or `?` among its marks stays as `!`). */
function dropCloser(text: string): string {
  let end = text.length;
  while (end > 0 && " \t\n!.".includes(text[end - 1] as string)) end--;
  if (end < 2 || !mayClose(text, end)) return text;
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
