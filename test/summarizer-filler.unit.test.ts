import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dropFiller } from "../services/summarizer/extract/filler.ts";
import { lineIdeas } from "../services/summarizer/extract/segment.ts";

const speakers = ["Caroline", "Melanie"];
const words = (text: string) => text.match(/[\p{L}\p{N}]+/gu) ?? [];

describe("filler dropped from a clause", () => {
  it("takes off opening interjections and a closing laugh or emoji", () => {
    expect(dropFiller("Haha yeah I drive a ford f150 lol")).toBe("I drive a ford f150");
    expect(dropFiller("Oh wow! So I went to Porto last May.")).toBe("I went to Porto last May.");
    expect(dropFiller("I really love olive oil 😂")).toBe("I really love olive oil");
    expect(dropFiller("Haha")).toBe("");
    expect(dropFiller("We met at the pier :D")).toBe("We met at the pier");
    expect(dropFiller("The tide was high, Hahaha!")).toBe("The tide was high!");
  });

  it("takes off a speaker's name said to them, not another name", () => {
    expect(dropFiller("Wow, that's cool, Caroline!", speakers)).toBe("that's cool!");
    expect(dropFiller("Hey Mel! I went to a support group yesterday.", speakers)).toBe(
      "I went to a support group yesterday.",
    );
    expect(dropFiller("Caroline, I adopted a dog.", speakers)).toBe("I adopted a dog.");
    expect(dropFiller("We went to Lisbon, Porto!", speakers)).toBe("We went to Lisbon, Porto!");
    expect(dropFiller("I met Caroline", speakers)).toBe("I met Caroline");
  });

  it("keeps what answers or takes back: 'no', 'actually'", () => {
    expect(dropFiller("Actually, we moved to Porto.")).toBe("Actually, we moved to Porto.");
    expect(dropFiller("No, the flight is at 9.")).toBe("No, the flight is at 9.");
  });

  it("leaves a line's reactions to its speakers out of the merge's clauses", () => {
    const line =
      "Melanie: Wow, that's cool, Caroline! I went camping at the beach. / Caroline: Thanks Mel!";
    expect(lineIdeas(line).ideas.map((idea) => idea.sentences.join(" "))).toEqual([
      "I went camping at the beach.",
      "",
    ]);
  });

  it("is idempotent and only ever leaves words out", () => {
    const word = fc.constantFrom(
      "oh",
      "Wow,",
      "haha",
      "lol",
      "really",
      "I",
      "went",
      "to",
      "Porto",
      "Caroline",
      "Mel!",
      "yeah",
      "super",
      "😂",
      "the",
      "beach,",
      "no",
      "9",
      "!",
      "so",
      "like",
      "Hey",
    );
    fc.assert(
      fc.property(fc.array(word, { maxLength: 12 }), (parts) => {
        const clause = parts.join(" ");
        const once = dropFiller(clause, speakers);
        expect(dropFiller(once, speakers)).toBe(once);
        // The words left are the clause's, in order.
        const left = words(once);
        let at = 0;
        for (const w of words(clause)) if (w === left[at]) at++;
        expect(at).toBe(left.length);
      }),
    );
  });
});
