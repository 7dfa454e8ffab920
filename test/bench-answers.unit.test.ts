import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerWords, holdsAll, lineClass, stem } from "../bench/support/answers.ts";

describe("the fidelity-real answer test", () => {
  it("reduces an answer to its content words, folded", () => {
    expect(answerWords("No, she works 40 hours a week.")).toEqual(["work", "40", "hour", "week"]);
    expect(answerWords("Kate's café in Málaga")).toEqual(["kat", "caf", "malaga"]);
    expect(answerWords("Yes.")).toEqual([]);
  });

  it("meets a word's inflections", () => {
    for (const [a, b] of [
      ["hiking", "hike"],
      ["hikes", "hiked"],
      ["running", "run"],
      ["stopped", "stop"],
      ["hobbies", "hobby"],
      ["studied", "study"],
    ]) {
      expect(stem(a as string)).toBe(stem(b as string));
    }
    expect(stem("miss")).toBe("miss");
    expect(stem("bus")).toBe("bus");
    expect(stem("falling")).toBe(stem("fall"));
  });

  it("holds an answer only when every content word stands in the text", () => {
    const words = answerWords("Cooking, skiing and hiking");
    expect(holdsAll("I love to cook; we went skiing and hiked all day", words)).toBe(true);
    expect(holdsAll("I love to cook; we went skiing", words)).toBe(false);
    // Whole words only: "king" is not found inside "asking".
    expect(holdsAll("asking", answerWords("king"))).toBe(false);
  });

  it("holds any answer in the answer's own text, whatever its case", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (answer) => {
        expect(holdsAll(answer.toUpperCase(), answerWords(answer))).toBe(
          holdsAll(answer.toLowerCase(), answerWords(answer)),
        );
        expect(holdsAll(answer, answerWords(answer))).toBe(true);
      }),
    );
  });

  it("classes a line by the messages it covers", () => {
    expect([1, 8, 16, 32, 64, 128, 1024].map(lineClass)).toEqual([
      "1–8",
      "1–8",
      "16",
      "32",
      "64",
      "128+",
      "128+",
    ]);
  });
});
