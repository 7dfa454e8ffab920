// A unit is one sentence someone said, with what makes it worth a place in a line: the terms it
// carries (exact tokens first, then words everyday English does not use) and whether it asks,
// decides or reports an outcome. Merges choose among units, never among fragments of a line.
import { utf8Bytes } from "../../../shared/bytes.ts";
import { findEntities, type Entity, type EntityKind } from "./entities.ts";
import { COMMON_WORDS } from "./lexicon.ts";
import { splitSentences } from "./segment.ts";

export interface Unit {
  /** Who said it: the message's author (a merged line names the speaker, not the addressee). */
  who: string;
  /** Position of the message it comes from (estimated for a unit read back from a line). */
  at: number;
  /** Its place in the message: 0 is the opening. */
  nth: number;
  text: string;
  /** UTF-8 bytes of `text`. */
  bytes: number;
  /** Worth on its own: its terms' weights and its cues. */
  score: number;
  /** Cue weight alone (request, decision, outcome, preference, change of mind). */
  cue: number;
  /** How much it tells of its speaker (voiceOf): a merge's factor on what it is worth. */
  voice: number;
  /** Lower-case terms and their weights, in the order they come. */
  terms: string[];
  weights: number[];
}

/** What an exact token is worth against a plain rare word (1). */
const KIND_WEIGHT: Record<EntityKind, number> = {
  carried: 3,
  url: 3,
  email: 3,
  path: 3,
  id: 3,
  date: 3,
  number: 2.5,
  name: 2.5,
};

// Words that say a sentence asks, decides, reports how something came out, states a lasting
// preference, takes back what was said before or tells of the speaker's people: what a reader
// of a summary needs most.
const REQUEST =
  /^(?:can|could|would|will) you\b|\b(?:please|i need|we need|need you to|make sure|remind me|deadline|due (?:by|on))\b/i;
const CUES: [RegExp, number][] = [
  [
    /\b(?:decided|decision|decide on|going with|go with|settled|agreed|final (?:answer|call|decision)|finali[sz]ed|confirmed|booked|signed|approved|chose|picked|we'll use|switch(?:ed|ing)? to|will be (?:in|on|at)|it's \w+ for)\b/i,
    2,
  ],
  [
    /\b(?:change of plans?|changed (?:my|our) minds?|scratch|instead|no longer|not anymore|moves? to|moved to|rescheduled|postponed|cancell?ed)\b|\bactually,/i,
    2,
  ],
  // Plans: what is to happen, and when.
  [/\b(?:let's|we'll|we will|going to be|scheduled|planned for|due on|is on|are on)\b/i, 1],
  [REQUEST, 1.5],
  // The people (and pets) in a speaker's life: "my sister moved to Porto", "our dog Max".
  [
    /\b(?:my|our) (?:mom|mum|mother|dad|father|parents|sister|brother|son|daughter|kids|children|husband|wife|partner|boyfriend|girlfriend|fianc[eé]e?|friends?|family|grandma|grandpa|cousin|aunt|uncle|dog|cat|puppy|kitten|boss|roommate)\b/i,
    1,
  ],
  [
    /\b(?:done|fixed|resolved|shipped|launched|released|failed|broke|succeeded|completed|finished|works now|is live|went live|rolled back|approved)\b/i,
    1.5,
  ],
  [
    /\b(?:prefers?|always|never|allergic|favou?rite|can't stand|hates?|loves?|vegetarian|vegan)\b/i,
    1.5,
  ],
];

const BARE_NUMBER_WEIGHT = 1.5;
const WORD = /[\p{L}][\p{L}\p{N}'’-]*/gu;
// Characters outside ASCII that neither make nor join a WORD and that lower-casing leaves as
// they are: a text with no others is read by asciiWords as by WORD. A cut unit is such a text
// (its `…`), as is a line's head (`→`).
// eslint-disable-next-line no-control-regex -- the range is every ASCII character, \x00 included
const NOT_PLAIN = /[^\x00-\x7f…—–→“”]/;
const MAX_TERM_WEIGHT = 12;

/**
 * The terms of a sentence: exact tokens (names, numbers, ids, dates…) and rare words. `found`:
 * the entities of the whole text the sentence comes from, found once (those it holds are its
 * own); else they are looked for in the sentence.
 */
export function termsOf(
  text: string,
  found?: readonly Entity[],
): { terms: string[]; weights: number[] } {
  return termsIn(text, found, !NOT_PLAIN.test(text));
}

/** termsOf, told whether asciiWords reads `text` (ASCII: a caller that counted its bytes knows). */
function termsIn(
  text: string,
  found: readonly Entity[] | undefined,
  plain: boolean,
): { terms: string[]; weights: number[] } {
  const terms: string[] = [];
  const weights: number[] = [];
  const seen = new Set<string>();
  const entities = found ? found.filter((e) => text.includes(e.text)) : findEntities(text);
  for (const entity of entities) {
    const key = entity.text.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    // A name's words count on their own too, so "Porto" matches "Porto" inside "Porto Alegre".
    terms.push(key);
    // A bare count ("278 of them") says less than an amount, a size or a share.
    const bare = entity.kind === "number" && /^\d+$/.test(entity.text);
    weights.push(bare ? BARE_NUMBER_WEIGHT : KIND_WEIGHT[entity.kind]);
    if (entity.kind === "name") for (const part of key.split(" ")) seen.add(part);
  }
  if (plain && text.length <= MAX_INTERNED_TEXT) {
    internedWords(text, seen, terms, weights);
    return { terms, weights };
  }
  const add = (word: string) => {
    if (word.length < 3 || seen.has(word) || everyday(word)) return;
    seen.add(word);
    terms.push(word);
    weights.push(word.length >= 8 ? 1.25 : 1);
  };
  eachWord(text, add, plain);
  return { terms, weights };
}

/** An everyday word, its apostrophe typed either way ("I’m" as "I'm"), or one drawn out. */
function everyday(word: string): boolean {
  return COMMON_WORDS.has(word.includes("’") ? word.replaceAll("’", "'") : word) || elongated(word);
}

/**
 * A word typed with a letter held ("sooo", "himmm", "yesss"): chat's tone of voice, not a rare
 * word. No English word has one letter three times in a row.
 */
export function elongated(word: string): boolean {
  for (let i = 2; i < word.length; i++) {
    const c = word.charCodeAt(i);
    if (c !== word.charCodeAt(i - 1) || c !== word.charCodeAt(i - 2)) continue;
    // A letter, not a digit ("win2000") nor a mark.
    if ((c >= 97 && c <= 122) || (c >= 0x80 && /\p{L}/u.test(word.charAt(i)))) return true;
  }
  return false;
}

// Words met before, each string made once: asciiWords made a string per word and hashed it
// twice (seen, COMMON_WORDS), the largest cost of a unit (bench e2e heavy). An open-addressing
// table keyed by the word's characters, with whether it is common and the last call that took
// it (so a call's own words need no set). Emptied when half full, between calls only.
const SLOTS = 1 << 16;
const words: (string | undefined)[] = new Array<string | undefined>(SLOTS);
const common = new Uint8Array(SLOTS);
const taken = new Uint32Array(SLOTS);
let used = 0;
let call = 0;
/** A text at most this long adds at most SLOTS / 8 words (each 3 letters and a separator). */
const MAX_INTERNED_TEXT = SLOTS / 2;

/** The terms among asciiWords(text) not in `seen`, as termsIn adds them (each once). */
function internedWords(text: string, seen: Set<string>, terms: string[], weights: number[]) {
  if (used > SLOTS / 2 || call === 0xffffffff) {
    words.fill(undefined);
    taken.fill(0);
    used = 0;
    call = 0;
  }
  const stamp = ++call;
  const checkSeen = seen.size > 0;
  const lower = text.toLowerCase();
  for (let i = scanWord(lower, 0); i >= 0; i = scanWord(lower, i)) {
    const { start, end, hash } = found;
    const length = end - start;
    if (length < 3) continue;
    let slot = (hash ^ (hash >>> 15)) & (SLOTS - 1);
    let word: string | undefined;
    for (;;) {
      word = words[slot];
      if (word === undefined) {
        word = lower.slice(start, end);
        words[slot] = word;
        common[slot] = everyday(word) ? 1 : 0;
        used++;
        break;
      }
      if (word.length === length && lower.startsWith(word, start)) break;
      slot = (slot + 1) & (SLOTS - 1);
    }
    if (common[slot] === 1 || taken[slot] === stamp) continue;
    taken[slot] = stamp;
    if (checkSeen && seen.has(word)) continue;
    terms.push(word);
    weights.push(length >= 8 ? 1.25 : 1);
  }
}

/**
 * WORD's matches in `text` of 3 letters or more (no shorter one is a term), lower-cased and
 * without a final 's. `plain`: `text` holds no NOT_PLAIN character.
 */
export function eachWord(
  text: string,
  add: (word: string) => void,
  plain = !NOT_PLAIN.test(text),
): void {
  if (plain) return asciiWords(text, add);
  for (const match of text.matchAll(WORD)) {
    const lower = match[0].toLowerCase();
    // `/['’]s$/u` off, by its last two characters (no RegExp per word).
    const n = lower.length;
    const word =
      n >= 2 &&
      lower.charCodeAt(n - 1) === 115 &&
      (lower.charCodeAt(n - 2) === 39 || lower.charCodeAt(n - 2) === 0x2019)
        ? lower.slice(0, n - 2)
        : lower;
    if (word.length >= 3) add(word);
  }
}

/**
 * eachWord for a plain text: a scan of character codes instead of a match object and two
 * strings per word (the extractive summarizer's largest cost, bench e2e heavy). Lower-casing
 * keeps a plain text's offsets.
 */
function asciiWords(text: string, add: (word: string) => void): void {
  const lower = text.toLowerCase();
  for (let i = scanWord(lower, 0); i >= 0; i = scanWord(lower, i)) {
    if (found.end - found.start >= 3) add(lower.slice(found.start, found.end));
  }
}

/** The word scanWord found last: where it is in the text, and its hash (for internedWords). */
const found = { start: 0, end: 0, hash: 0 };

/**
 * The next word of a plain, lower-cased text at or after `i`: `[a-z][a-z0-9'-]*` without a
 * final `'s`, into `found`; returns where the scan goes on, or -1 when there is none.
 */
function scanWord(lower: string, i: number): number {
  const n = lower.length;
  while (i < n) {
    const c = lower.charCodeAt(i);
    if (c < 97 || c > 122) {
      i++;
      continue;
    }
    const start = i++;
    // The word's hash as it grows, and as it stood one and two characters back (for a `'s`).
    let hash = c;
    let back1 = 0;
    let back2 = 0;
    for (; i < n; i++) {
      const d = lower.charCodeAt(i);
      // [a-z0-9'-] (upper case is lower-cased already)
      if (!((d >= 97 && d <= 122) || (d >= 48 && d <= 57) || d === 39 || d === 45)) break;
      back2 = back1;
      back1 = hash;
      hash = (Math.imul(hash, 31) + d) | 0;
    }
    found.start = start;
    found.end = i;
    found.hash = hash;
    if (i - start >= 2 && lower.charCodeAt(i - 1) === 115 && lower.charCodeAt(i - 2) === 39) {
      found.end = i - 2;
      found.hash = back2;
    }
    return i;
  }
  return -1;
}

// An event: what the speaker did, does or is about to do, and when ("last Friday we made
// macarons", "we fly to Porto tomorrow", "I moved here 3 years ago"). Said of the speaker alone
// ("the standup ran long this morning" is no one's event), and of a time that is named: "again on
// Friday" is more often a maybe than a plan.
const WHEN =
  /\b(?:today|tonight|tomorrow|yesterday|recently|(?:days?|weeks?|months?|years?) ago|next (?:week|weekend|month|year|summer|winter)|last (?:night|week|weekend|year|month|summer|winter|time)|this (?:morning|afternoon|evening|weekend|week|month|year)|(?:last|this|next) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b/i;
const FIRST_PERSON = /\b(?:i|we|my|our)\b/i;
/** An event's cue: a decision's. */
const EVENT = 2;

export function cueOf(text: string): number {
  // A question's "favourite" or "decided" asks; it states nothing. Only a request counts.
  if (text.endsWith("?")) return REQUEST.test(text) ? 1.5 : 0;
  let cue = WHEN.test(text) && FIRST_PERSON.test(text) ? EVENT : 0;
  for (const [pattern, weight] of CUES) {
    if (pattern.test(text)) cue += weight;
    if (cue >= 4) return 4; // the most a cue counts: the rest cannot change it
  }
  return Math.min(cue, 4);
}

// What people later ask about is what speakers said of themselves ("my sister lives in Porto");
// a remark about the listener or a reaction mostly answers what came before it. On REALTALK, a
// clause with my/our/we holds an answer word twice as often as the average, one about "you" half.
// One scan for the three: my/our/we (a contraction's "we" too: "we're"), I/me, you.
const PRONOUN = /\b(?:(my|our|ours|we|mine)|(i|im|ive|me)|(you|your|yours|u|ur))\b/gi;
const REACTION =
  /^(?:that|that's|that’s|thats|it's|it’s|its|sounds|wow|oh|aw|haha|lol|nice|cool|omg|yeah|yes)\b/i;
// What may be, could be or should be ("you could try Porto", "I would love to see it", "that
// might help") is advice or a wish, not what happened: on REALTALK's merged clauses, one with a
// modal verb holds a third as many answer words a byte as the average. Advice without a modal
// is the same: "you need to see it", "I recommend the tour", and the imperatives "Make sure you
// book", "check out their menu" (not "I always make sure to…", which tells of the speaker).
// ("May" the month is capitalised; the verb mid-sentence is not.)
const MAYBE =
  /\b(?:[Cc]an|[Cc]ould|[Ss]hould|[Ww]ould|[Mm]ight|may|[Yy]ou (?:need|have|got) to|[Ii] (?:recommend|suggest))\b|(?:^|[.!?,;:]\s+)(?:[Mm]ake sure|[Dd]on['’]t forget|[Cc]heck out)\b/;
/**
 * Factors on what a sentence is worth: of the speaker's own (we, I), of the listener's, a
 * reaction, a modal (MAYBE).
 */
const VOICE = { ours: 1.3, mine: 1.15, yours: 0.6, reaction: 0.6, maybe: 0.8 };

/** What each of MAYBE's phrases holds: a text with none of them needs no RegExp. */
const MAYBE_NEEDLES = [
  "ould",
  "can",
  "Can",
  "ight",
  "may",
  "ou need",
  "ou have",
  "ou got",
  "ake sure",
  "t forget",
  "heck out",
  "recommend",
  "suggest",
];

/** Whether MAYBE may match (searches, not a RegExp). */
function mayHaveModal(text: string): boolean {
  for (const needle of MAYBE_NEEDLES) if (text.includes(needle)) return true;
  return false;
}

/** How much a sentence tells of its speaker: a factor on its worth in a merge (1: neutral). */
export function voiceOf(text: string): number {
  let mine = false;
  let yours = false;
  let voice = 1;
  PRONOUN.lastIndex = 0;
  for (let match = PRONOUN.exec(text); match; match = PRONOUN.exec(text)) {
    if (match[1] !== undefined) {
      voice = VOICE.ours;
      break;
    }
    if (match[2] !== undefined) mine = true;
    else yours = true;
  }
  if (voice === 1) voice = mine ? VOICE.mine : yours ? VOICE.yours : 1;
  if (REACTION.test(text)) voice *= VOICE.reaction;
  return mayHaveModal(text) && MAYBE.test(text) ? voice * VOICE.maybe : voice;
}

/** A unit of `text` as `who` said it in message `at`, its `nth` sentence. */
export function makeUnit(
  who: string,
  at: number,
  nth: number,
  text: string,
  found?: readonly Entity[],
  /** UTF-8 bytes of `text`, when the caller counted them already. */
  bytes = utf8Bytes(text),
): Unit {
  const { terms, weights } = countedTerms(text, bytes, found);
  const cue = cueOf(text);
  let sum = 0;
  for (const w of weights) sum += w;
  // A short acknowledgement carries no term: it scores nothing and is chosen last, if ever.
  const score = Math.min(sum, MAX_TERM_WEIGHT) + (terms.length > 0 ? cue : cue / 4);
  const voice = voiceOf(text);
  return {
    who,
    at,
    nth,
    text,
    bytes,
    score: score + (nth === 0 ? 0.25 : 0),
    cue,
    voice,
    terms,
    weights,
  };
}

/** termsOf for a text of `bytes` UTF-8 bytes. */
export function countedTerms(
  text: string,
  bytes: number,
  found?: readonly Entity[],
): { terms: string[]; weights: number[] } {
  // As many bytes as characters: ASCII, known without a second scan.
  return termsIn(text, found, bytes === text.length || !NOT_PLAIN.test(text));
}

// Where a long sentence may be cut into clauses that still read: after a comma, semicolon,
// colon or dash, or before a conjunction that opens a new clause. Written as a run of spaces
// first, then what must stand around it: the same matches as
// `(?<=[,;:])\s+|\s+(?=[—–]\s)|\s+(?=(?:and|…)\s)`, found in half the time, as the RegExp
// engine now only tries where a space is (test/summarizer-fast-paths.unit.test.ts holds it).
const CLAUSE =
  /\s+(?:(?<=[,;:]\s+)|(?=[—–]\s)|(?=(?:and|but|so|because|which|while|although|though|after|before|since|unless|until|then)\s))/giu;

/** A sentence's clauses, in order; joined with single spaces they give the sentence back. */
export function clausesOf(text: string): string[] {
  const spans = clauseSpans(text);
  const clauses: string[] = [];
  for (let c = 0; c < spans.length; c += 2) clauses.push(text.slice(spans[c], spans[c + 1]));
  return clauses;
}

/**
 * Where `text.split(CLAUSE)` puts its pieces, trimmed and non-empty, as [start, end) offsets:
 * tighten needs only the few clauses it keeps as strings. CLAUSE only matches whole runs of
 * `\s`, so a piece has space to trim only at the text's start and end.
 */
export function clauseSpans(text: string): number[] {
  const spans: number[] = [];
  let piece = 0;
  CLAUSE.lastIndex = 0;
  for (let match = CLAUSE.exec(text); match; match = CLAUSE.exec(text)) {
    pushTrimmed(spans, text, piece, match.index);
    piece = CLAUSE.lastIndex;
  }
  pushTrimmed(spans, text, piece, text.length);
  return spans;
}

function pushTrimmed(spans: number[], text: string, start: number, end: number): void {
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  if (end > start) spans.push(start, end);
}

/** `\s`, and what trim() takes off: the same set. */
export function isSpace(c: number): boolean {
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Sentences of a piece of a line, clauses split on semicolons (a line joins clauses so). */
export function lineSentences(body: string): string[] {
  return splitSentences(body, true);
}
