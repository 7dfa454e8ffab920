import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { lineHolding } from "../shared/search.ts";
import type { StoredSnapshot, ThreadReader } from "../services/nats/reader.ts";
import { CoverageCache } from "../services/search/coverage.ts";
import type { SearchIndexer } from "../services/search/indexer.ts";
import { createSearch } from "../services/search/search.ts";

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

/** A thread whose snapshot the test changes, read as the reader reads it; counts whole reads. */
function threadInKv() {
  let revision = 0;
  let sizes: number[] = [];
  const reads = { whole: 0, byRevision: 0 };
  const current = (): StoredSnapshot => {
    let id = 0;
    const lines = sizes.map((n) => {
      const line = { id, n, level: Math.log2(n), text: `line ${id}`, bytes: 8, until: "" };
      id += n;
      return line;
    });
    const snapshot = { thread: "t", boundary: id, lines, tail: [`m${revision}`], tailSeqs: [id] };
    const bytes = new TextEncoder().encode(JSON.stringify(snapshot));
    return {
      bytes,
      revision,
      parse: () => JSON.parse(new TextDecoder().decode(bytes)) as OutlineSnapshot,
    };
  };
  const reader: Pick<ThreadReader, "storedSnapshot" | "storedSnapshotSince" | "lastMessageSeq"> = {
    storedSnapshot: () => {
      reads.whole += 1;
      return Promise.resolve(current());
    },
    storedSnapshotSince: (_thread, held) => {
      reads.byRevision += 1;
      // The proof is the held revision's newest tail message.
      expect(held.proof?.id).toBe(`m${held.revision}`);
      return Promise.resolve(held.revision === revision ? "unchanged" : current());
    },
    lastMessageSeq: () => Promise.resolve(1),
  };
  const put = (next: number[]) => {
    revision += 1;
    sizes = next;
  };
  return { reader, reads, put, current };
}

/** An index holding one message at every position below 64. */
const everyPosition = {
  store: () => ({
    appliedSeq: 1,
    search: (_thread: string, _plan: unknown, before: number, limit: number) => ({
      hits: Array.from({ length: Math.min(limit, before, 64) }, (_, i) => ({
        position: Math.min(before, 64) - 1 - i,
        message: `m${i}`,
        at: "",
        from: "Ana",
        text: "x",
      })),
      before: null,
    }),
  }),
} as unknown as SearchIndexer;

describe("a search's snapshot read", () => {
  it("asks by revision once it holds a thread's coverage, and every hit names its current line", async () => {
    const puts = fc.array(fc.oneof(fc.constant(null), sizes), { minLength: 1, maxLength: 20 });
    await fc.assert(
      fc.asyncProperty(sizes, puts, async (first, steps) => {
        const kv = threadInKv();
        kv.put(first);
        const search = createSearch(kv.reader, everyPosition);
        for (const [i, step] of steps.entries()) {
          if (step) kv.put(step);
          const before = { ...kv.reads };
          const reply = await search({ thread: "t", q: "x", limit: "100" });
          const { lines, boundary } = kv.current().parse();
          for (const hit of reply.hits) expect(hit.in).toBe(lineHolding(lines, boundary, hit.id));
          // The first query reads the snapshot whole; later ones ask by revision, and read it
          // whole again only inside storedSnapshotSince's answer when it changed.
          expect(kv.reads.whole - before.whole).toBe(i === 0 ? 1 : 0);
          expect(kv.reads.byRevision - before.byRevision).toBe(i === 0 ? 0 : 1);
        }
      }),
    );
  });
});
