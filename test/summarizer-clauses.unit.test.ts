import { describe, expect, it } from "vitest";
import { lineIdeas } from "../services/summarizer/extract/segment.ts";

const texts = (line: string) => lineIdeas(line).ideas.map((idea) => idea.sentences.join(" "));

describe("a line read back for a merge", () => {
  it("offers a long sentence's clauses apart, so a merge can keep the one with the fact", () => {
    expect(
      texts("Emi: I study at NYU in New York, a bit away from home but totally worth it."),
    ).toEqual(["I study at NYU in New York,", "a bit away from home but totally worth it."]);
  });

  it("keeps a clause too short to read on its own with its neighbour", () => {
    expect(texts("Emi: Yeah I do, I have cousins who live over there!")).toEqual([
      "Yeah I do, I have cousins who live over there!",
    ]);
    expect(texts("Bo: We went to Porto, Lisbon, and Faro last May.")).toEqual([
      "We went to Porto, Lisbon, and Faro last May.",
    ]);
  });
});
