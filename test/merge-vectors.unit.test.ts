import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runBatch, toLine, type Line } from "../shared/batch.ts";

// 200 batches computed by an independent implementation (SPEC §4 step 5): a correct batch
// reproduces every `after`.
interface VectorCase {
  low: number;
  high: number;
  boundaryBefore: number;
  boundaryAfter: number;
  before: { id: number; n: number; textBytes: number }[];
  leaves: { id: number; textBytes: number }[];
  parentTextBytes: Record<string, number>;
  after: { id: number; n: number }[];
}

const vectors = JSON.parse(
  readFileSync(new URL("./fixtures/merge-batches.json", import.meta.url), "utf8"),
) as { cases: VectorCase[] };

const line = (id: number, n: number, textBytes: number): Line =>
  toLine({ level: Math.log2(n), index: id / n, text: "x".repeat(textBytes), until: "" });

describe("merge batches against the reference vectors", () => {
  it("has 200 cases", () => expect(vectors.cases).toHaveLength(200));

  it.each(vectors.cases.map((c, i) => [i, c] as const))("case %i reproduces `after`", (_, c) => {
    const lines = [
      ...c.before.map((l) => line(l.id, l.n, l.textBytes)),
      ...c.leaves.map((l) => line(l.id, 1, l.textBytes)),
    ];
    const bytes = lines.reduce((sum, l) => sum + l.bytes, 0);
    expect(bytes).toBeGreaterThan(c.high);
    const progress = runBatch(lines, bytes, c.boundaryAfter, c.low, (level, index) => {
      const n = 2 ** level;
      const size = c.parentTextBytes[`${index * n}+${n}`];
      return size === undefined ? undefined : { level, index, text: "x".repeat(size), until: "" };
    });
    expect(progress.waitingFor).toBeUndefined();
    expect(progress.lines.map((l) => ({ id: l.index * 2 ** l.level, n: 2 ** l.level }))).toEqual(
      c.after,
    );
    // Every parent the reference built is one this batch merged, in some order.
    expect(progress.merged.map((r) => `${r.index * 2 ** r.level}+${2 ** r.level}`).sort()).toEqual(
      Object.keys(c.parentTextBytes).sort(),
    );
    expect(progress.bytes).toBe(progress.lines.reduce((sum, l) => sum + l.bytes, 0));
  });
});
