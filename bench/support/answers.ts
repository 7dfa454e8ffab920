// Whether a gold answer stands in a text, word for word: the test `bench -- fidelity-real` puts
// to the outline lines covering a question's evidence. An answer is reduced to its content words
// (case, accents, possessives and plural -s folded; function words dropped); a text holds it when
// every one of those words occurs in it. A question counts only when its evidence messages hold
// its answer this way (answerable): the others need inference, arithmetic or a date.

/** Words that carry no fact on their own; dropped from answers before matching. */
const STOPWORDS = new Set(
  (
    "a an the and or but nor so yet of to in on at by for from with without into onto about " +
    "as than then that this these those there here it its it's is are was were be been being " +
    "am do does did done has have had having will would shall should can could may might must " +
    "i me my mine we us our ours you your yours he him his she her hers they them their theirs " +
    "who whom whose which what when where why how not no yes also too very just only some any " +
    "all both each other such own same s t d ll m re ve up out off over again once"
  ).split(" "),
);

/**
 * One lower-case word folded for matching, so "hiking", "hikes" and "hike" meet: -ing, -ed and
 * plural or third-person -s dropped, then a doubled final consonant and a final -e. Both sides
 * go through it, so it need only be consistent, not a linguist's stem.
 */
export function stem(word: string): string {
  let w = word;
  if (w.length > 5 && w.endsWith("ing")) w = undouble(w.slice(0, -3));
  else if (w.length > 4 && (w.endsWith("ied") || w.endsWith("ies"))) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && w.endsWith("ed")) w = undouble(w.slice(0, -2));
  else if (w.length > 3 && w.endsWith("es")) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith("s") && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  return w.length > 3 && w.endsWith("e") ? w.slice(0, -1) : w;
}

/** "runn" → "run", "stopp" → "stop"; "fall", "miss" and "buzz" stay. */
function undouble(w: string): string {
  const last = w.at(-1) ?? "";
  return w.length > 2 && last === w.at(-2) && /[b-df-hj-km-rtv-y]/.test(last) ? w.slice(0, -1) : w;
}

/** The text's words in lower case without accents; apostrophes split a possessive off. */
function tokens(text: string): string[] {
  const plain = text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();
  return plain.match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** The text's words, folded (stem), in order. */
export function words(text: string): string[] {
  return tokens(text).map(stem);
}

/** An answer's content words, folded and deduplicated; empty when it has none (e.g. "Yes."). */
export function answerWords(answer: string): string[] {
  return [
    ...new Set(
      tokens(answer)
        .filter((w) => !STOPWORDS.has(w))
        .map(stem),
    ),
  ];
}

/** Every one of `wanted` occurs among the words of `text`. */
export function holdsAll(text: string, wanted: readonly string[]): boolean {
  const have = new Set(words(text));
  return wanted.every((w) => have.has(w));
}

/** Size classes of the line covering a question's evidence, as issue 46 tabulates them. */
export const LINE_CLASSES = ["1–8", "16", "32", "64", "128+"] as const;
export type LineClass = (typeof LINE_CLASSES)[number];

/** The class of a line covering `n` messages (a power of two). */
export function lineClass(n: number): LineClass {
  if (n <= 8) return "1–8";
  if (n >= 128) return "128+";
  return String(n) as LineClass;
}
