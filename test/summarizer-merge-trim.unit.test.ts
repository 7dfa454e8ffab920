import { describe, expect, it } from "vitest";
import { lineDigest } from "../services/summarizer/extract/digest.ts";
import { composeMerge } from "../services/summarizer/extract/merge.ts";

const left = lineDigest(
  "Ana: We flew to Porto for the Sardine Festival with Marta because it was something that we had been talking about for a really long time now.",
  0,
  1,
);
const right = lineDigest(
  "Bo: My brother Tomas bought a kayak in Lisbon. He paddles on the Tagus every Sunday with Ricardo. His wife Ines works at the Gulbenkian museum. Their dog Bolacha hates the water. Next spring they move to Coimbra for his job at Critical Software. Ines starts a pottery class in Aveiro.",
  1,
  1,
);

describe("a merged line's long sentences", () => {
  it("go in as their weightiest clauses when the line cannot hold every sentence", () => {
    const { text } = composeMerge(left.units, right.units, 320);
    expect(text).toContain("Ana: We flew to Porto for the Sardine Festival with Marta…");
    expect(text).not.toContain("talking about");
    expect(text).toContain("pottery class in Aveiro");
  });

  it("stay whole when the line has room for all", () => {
    const { text } = composeMerge(left.units, right.units, 512);
    expect(text).toContain("talking about for a really long time now.");
    expect(text).toContain("Gulbenkian");
  });
});
