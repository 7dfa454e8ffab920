import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { planQuery } from "../shared/search.ts";
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
