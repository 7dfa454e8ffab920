import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fold, normalizeText, planQuery } from "../shared/search.ts";
import { SearchStore, StoreMismatch, type IndexEvent } from "../services/search/store.ts";
import { makeMessage } from "./support/conversation.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "outline-search-store-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const message = (thread: string, i: number, text: string, seq: number): IndexEvent => ({
  kind: "message",
  seq,
  thread,
  message: makeMessage(thread, i, text),
});
const ids = (store: SearchStore, thread: string, q: string) =>
  store.search(thread, planQuery(q), Number.MAX_SAFE_INTEGER, 100).hits.map((h) => h.position);

describe("SearchStore", () => {
  it("numbers a thread's messages as the worker does: ids once, nothing after a delete", () => {
    const store = SearchStore.open(join(dir, "s.db"));
    const counts = store.apply(
      [
        message("a", 0, "alpha one", 1),
        message("b", 0, "alpha in b", 2),
        { kind: "other", seq: 3 },
        // The same message id again (published past the duplicate window): applied once.
        message("a", 0, "alpha one again", 4),
        message("a", 1, "alpha two", 5),
        { kind: "deleted", seq: 6, thread: "b" },
        message("b", 1, "alpha after the delete", 7),
      ],
      7,
    );
    expect(counts).toEqual({ indexed: 3, duplicates: 1, deleted: 1 });
    expect(ids(store, "a", "alpha")).toEqual([1, 0]);
    expect(ids(store, "b", "alpha")).toEqual([]);
    expect(store.rowsOf("b")).toBe(0);
    expect(store.appliedSeq).toBe(7);
    // A redelivery at or below the applied sequence changes nothing.
    store.apply([message("a", 2, "alpha three", 5)], 5);
    expect(ids(store, "a", "alpha")).toEqual([1, 0]);
    store.close();
    const reopened = SearchStore.open(join(dir, "s.db"));
    expect(reopened.appliedSeq).toBe(7);
    expect(reopened.count("a")).toBe(2);
    expect(reopened.eraseGone(new Set(["b"]))).toEqual(["a"]);
    expect(reopened.rowsOf("a")).toBe(0);
    reopened.close();
  });

  it("finds a phrase through its words as through the phrase itself: the same hits", () => {
    // Few words, some short, in any case: phrases match often, and words without the phrase too.
    const word = fc.constantFrom("is", "a", "the", "Code", "locker", "LOCK", "er", "4711", "c0de");
    const text = fc.array(word, { minLength: 1, maxLength: 8 }).map((w) => w.join(" "));
    let n = 0;
    fc.assert(
      fc.property(
        fc.array(text, { minLength: 1, maxLength: 30 }),
        fc.array(word, { minLength: 2, maxLength: 3 }).map((w) => w.join(" ")),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 40 }),
        (texts, query, candidates, limit) => {
          const store = SearchStore.open(join(dir, `p${n++}.db`), { candidates });
          try {
            store.apply(
              texts.map((t, i) => message("t", i, t, i + 1)),
              texts.length,
            );
            const q = normalizeText(query);
            const plan = planQuery(q);
            expect(plan.kind === "trigram" && plan.words !== undefined).toBe(
              q.split(" ").some((w) => w.length >= 4),
            );
            const expected = texts
              .map((t, i) => ({ t, i }))
              .filter(({ t }) => fold(normalizeText(t)).includes(fold(q)))
              .map(({ i }) => i)
              .reverse();
            // Words first (small `candidates` send common words to the phrase), the phrase alone.
            const phraseOnly =
              plan.kind === "trigram" ? { kind: plan.kind, match: plan.match } : plan;
            for (const p of [plan, phraseOnly]) {
              const page = store.search("t", p, Number.MAX_SAFE_INTEGER, limit);
              expect(page.hits.map((h) => h.position)).toEqual(expected.slice(0, limit));
              expect(page.before).toBe(expected.length > limit ? expected[limit - 1] : null);
            }
          } finally {
            store.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("refuses a file another search service holds, and gives up only files that are not ours", () => {
    const path = join(dir, "s.db");
    const first = SearchStore.open(path);
    expect(() => SearchStore.open(path)).toThrow(/in use by another search service/);
    first.close();
    const junk = join(dir, "junk.db");
    writeFileSync(junk, "not a database ".repeat(200));
    expect(() => SearchStore.open(junk)).toThrow(StoreMismatch);
  });
});

describe("an index written by the better-sqlite3 store", () => {
  // test/fixtures/search-index-v1/search.db was written by the store before it moved to
  // node:sqlite: threads alpha and beta with six messages each, thread gone deleted, seq 20.
  const texts = [
    "the locker code is 4711",
    "we moved the launch to Tuesday",
    "東京で会いましょう 🎉",
    "scratch Halifax, we're doing Porto",
    "ok",
    "ZEBRA-42 is the ticket",
  ];
  const copy = () => {
    const path = join(dir, "old.db");
    copyFileSync(
      fileURLToPath(new URL("fixtures/search-index-v1/search.db", import.meta.url)),
      path,
    );
    return path;
  };

  it("is read as it is: the same hits, sequence and stream, and it takes new events", () => {
    const store = SearchStore.open(copy());
    expect(store.appliedSeq).toBe(20);
    expect(store.stream).toEqual({ name: "CHAT", created: "2026-01-01T00:00:00.000Z" });
    expect(store.totals()).toEqual({ threads: 2, messages: 12 });
    // Every query kind (trigram words and phrase, dense grams, a short scan) finds what a fresh
    // index of the same events finds.
    const fresh = SearchStore.open(join(dir, "fresh.db"));
    let seq = 0;
    const events: IndexEvent[] = [];
    for (const t of ["alpha", "beta", "gone"]) {
      texts.forEach((x, i) => events.push(message(t, i, `${x} (${t})`, ++seq)));
    }
    events.push({ kind: "other", seq: ++seq }, { kind: "deleted", seq: ++seq, thread: "gone" });
    fresh.apply(events, seq);
    for (const q of ["locker code", "Porto", "東京", "🎉", "ok", "zebra-42", "tuesday launch"]) {
      for (const t of ["alpha", "beta", "gone"]) {
        expect(ids(store, t, q), `${q} in ${t}`).toEqual(ids(fresh, t, q));
      }
    }
    expect(ids(store, "alpha", "locker")).toEqual([0]);
    expect(store.rowsOf("gone")).toBe(0);
    store.apply([message("alpha", 6, "the locker moved", 21)], 21);
    expect(ids(store, "alpha", "locker")).toEqual([6, 0]);
    fresh.close();
    store.close();
  });
});
