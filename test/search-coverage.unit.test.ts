import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import type { StoredSnapshot } from "../services/nats/reader.ts";
import { CoverageCache } from "../services/search/coverage.ts";

/** A stored snapshot whose lines tile [0, boundary) with the given sizes; counts its parses. */
function stored(revision: number, sizes: number[], parses: { n: number }): StoredSnapshot {
  let id = 0;
  const lines = sizes.map((n) => {
    const line = { id, n, level: Math.log2(n), text: `line ${id}`, bytes: 8, until: "" };
    id += n;
    return line;
  });
  const snapshot = { thread: "t", boundary: id, lines } as unknown as OutlineSnapshot;
  const bytes = new TextEncoder().encode(JSON.stringify(snapshot));
  return {
    bytes,
    revision,
    parse: () => {
      parses.n += 1;
      return JSON.parse(new TextDecoder().decode(bytes)) as OutlineSnapshot;
    },
  };
}

const sizes = fc.array(fc.constantFrom(1, 2, 4, 8, 16), { maxLength: 12 });

describe("the search's coverage cache", () => {
  it("answers what a fresh parse answers, and parses only what it does not keep", () => {
    // Each step asks about one of three threads at a revision; a revision fixes the content.
    const step = fc.record({ thread: fc.constantFrom("a", "b", "c"), revision: fc.nat(5) });
    const contents = fc.array(sizes, { minLength: 6, maxLength: 6 });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), contents, (steps, content) => {
        const cache = new CoverageCache(2);
        // The model: the two threads asked last, each with the revision it was asked at.
        const model = new Map<string, number>();
        for (const { thread, revision } of steps) {
          const parses = { n: 0 };
          const s = stored(revision, content[revision] ?? [], parses);
          const got = cache.of(thread, s);
          expect(parses.n).toBe(model.get(thread) === revision ? 0 : 1);
          const fresh = s.parse();
          expect(got.boundary).toBe(fresh.boundary);
          expect(got.lines).toEqual(fresh.lines.map(({ id, n }) => ({ id, n })));
          model.delete(thread);
          model.set(thread, revision);
          if (model.size > 2) model.delete(model.keys().next().value as string);
          expect(cache.size).toBe(model.size);
        }
      }),
    );
  });

  it("parses again when the revision changes, and forgets a thread whose snapshot is gone", () => {
    const cache = new CoverageCache();
    const parses = { n: 0 };
    cache.of("t", stored(3, [4, 2], parses));
    cache.of("t", stored(3, [4, 2], parses));
    expect(parses.n).toBe(1);
    expect(cache.of("t", stored(4, [4, 2, 1], parses)).boundary).toBe(7);
    expect(parses.n).toBe(2);
    expect(cache.of("t", undefined)).toEqual({ lines: [], boundary: 0 });
    expect(cache.size).toBe(0);
  });

  it("keeps the threads asked most recently when it is full", () => {
    const cache = new CoverageCache(2);
    const parses = { n: 0 };
    cache.of("a", stored(1, [2], parses));
    cache.of("b", stored(1, [2], parses));
    cache.of("a", stored(1, [2], parses));
    cache.of("c", stored(1, [2], parses));
    expect(parses.n).toBe(3);
    cache.of("a", stored(1, [2], parses));
    expect(parses.n).toBe(3);
    cache.of("b", stored(1, [2], parses));
    expect(parses.n).toBe(4);
  });
});
