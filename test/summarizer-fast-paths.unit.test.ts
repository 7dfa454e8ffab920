import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entityMatches, PATTERN } from "../services/summarizer/extract/entities.ts";
import { trimEndMarks } from "../services/summarizer/extract/compose.ts";
import { COMMON_WORDS } from "../services/summarizer/extract/lexicon.ts";
import { abbreviated } from "../services/summarizer/extract/segment.ts";
import { clausesOf, eachWord, elongated, termsOf } from "../services/summarizer/extract/units.ts";

// Pieces that start, continue or end entities (and the surrogate pairs a `u` search steps over),
// so arbitrary strings of them reach every alternative of PATTERN.
const PIECES = [
  ..."aAbhtpsvxyzdefMJTK0123456789_:/.@-+~#$€£¥ \t\n\r,;!?)](\"'’`é東Éα🎉𝐀",
  "\ud83d",
  "\ude00",
  "http://",
  "https://x.io/",
  "Jan ",
  "Mon",
  "day",
  ".md",
  ".com",
  "INV-",
  "Ana ",
  " de ",
  " am",
  "ms",
  "deadbeef",
  "foo_bar",
];

const matchesOf = (found: Iterable<RegExpMatchArray>) =>
  [...found].map((m) => ({ index: m.index, groups: [...m] }));

describe("entity matches", () => {
  it("are those of a search at every position, on any text", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 60 }), (pieces) => {
        const text = pieces.join("");
        expect(matchesOf(entityMatches(text))).toEqual(matchesOf(text.matchAll(PATTERN)));
      }),
      { numRuns: 2_000 },
    );
  });

  it("are those of a search at every position, on any unicode text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 80 }), (text) => {
        expect(matchesOf(entityMatches(text))).toEqual(matchesOf(text.matchAll(PATTERN)));
      }),
    );
  });
});

// ASCII, the characters outside it a plain text may hold, and a few it may not (’, letters).
const WORDISH = [..."aZb9_'- .,;…—–→“”sS", "'s", "Ana", "x1", "it's", "’s", "é", "Ω", "٣"];

const wordsOf = (text: string, plain?: boolean) => {
  const words: string[] = [];
  eachWord(text, (w) => words.push(w), plain);
  return words;
};

describe("words of a text", () => {
  it("are those WORD finds, whichever way the text is read", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...WORDISH), { maxLength: 40 }), (parts) => {
        const text = parts.join("");
        expect(wordsOf(text)).toEqual(wordsOf(text, false));
      }),
      { numRuns: 3_000 },
    );
  });

  it("are read by WORD when a letter outside ASCII is there", () => {
    expect(wordsOf("Zoë’s café opened")).toEqual(["zoë", "café", "opened"]);
  });
});

describe("terms of a plain text", () => {
  it("are its words met once each, in order, none of them common", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...WORDISH, "the", "deploy", "Deploy's"), { maxLength: 40 }),
        (parts) => {
          const text = parts.join("");
          const expected: string[] = [];
          eachWord(
            text,
            (w) => {
              if (w.length >= 3 && !COMMON_WORDS.has(w) && !elongated(w) && !expected.includes(w))
                expected.push(w);
            },
            false,
          );
          const { terms, weights } = termsOf(text, []);
          expect(terms).toEqual(expected);
          expect(weights).toEqual(expected.map((w) => (w.length >= 8 ? 1.25 : 1)));
        },
      ),
      { numRuns: 3_000 },
    );
  });
});

// Spaces \s holds (and trim takes off), a long s (`ſo` is `so` to /iu), dashes, conjunctions.
const CLAUSISH = [
  ..." \t\n\u00a0\u2003\u3000\ufeff,;:—–-aAsSſ.x🎉",
  "and",
  "AND",
  "ſo",
  "Since",
  "although",
  "then",
];

// Where a sentence was cut into clauses before clausesOf searched with a faster RegExp.
const CLAUSE =
  /(?<=[,;:])\s+|\s+(?=[—–]\s)|\s+(?=(?:and|but|so|because|which|while|although|though|after|before|since|unless|until|then)\s)/giu;

describe("clauses of a sentence", () => {
  it("are the pieces the first CLAUSE split it into, trimmed, none empty", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...CLAUSISH), { maxLength: 40 }), (parts) => {
        const text = parts.join("");
        const split = text
          .split(CLAUSE)
          .map((c) => c.trim())
          .filter((c) => c.length > 0);
        expect(clausesOf(text)).toEqual(split);
      }),
      { numRuns: 3_000 },
    );
  });
});

describe("marks off a cut's end", () => {
  it("are those the RegExp took off", () => {
    const chars = [..." \t\n\u00a0\u2003\u3000\ufeff\u200b,;:—–-−.a…", "\ud83d", "\ude00"];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...chars), { maxLength: 20 }), (parts) => {
        const text = parts.join("");
        expect(trimEndMarks(text)).toBe(text.replace(/[\s,;:–—-]+$/u, ""));
      }),
      { numRuns: 3_000 },
    );
  });
});

describe("a sentence's abbreviated end", () => {
  it("is what the RegExp tested on the whole sentence finds", () => {
    const ABBREVIATION =
      /(?:^|[\s(])(?:e\.g|i\.e|etc|vs|cf|approx|incl|Mr|Mrs|Ms|Dr|Prof|St|No|Fig|Inc|Ltd|Jr|Sr|\p{Lu})\.$/u;
    const parts = [
      ..." (.aZé",
      "approx",
      "e.g",
      "Dr",
      "Mrs",
      "Ω",
      "𝐀",
      "\ud835",
      "\udc00",
      "xxxxxx",
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...parts), { maxLength: 12 }), (pieces) => {
        const sentence = pieces.join("");
        expect(abbreviated(sentence)).toBe(ABBREVIATION.test(sentence));
      }),
      { numRuns: 5_000 },
    );
  });
});
