import { describe, expect, it } from "vitest";
import { notOlder } from "../services/thread-worker/snapshot-writer.ts";
import { initialThreadState } from "../shared/thread.ts";
import { toSnapshot, type OutlineSnapshot } from "../shared/snapshot.ts";

const base: OutlineSnapshot = toSnapshot(
  initialThreadState("t", { line: 512, tail: [200, 400], outline: [2000, 4000], concurrency: 4 }),
);
const at = (seq: number, boundary: number, jobs: number): OutlineSnapshot => ({
  ...base,
  seq,
  boundary,
  pending: { jobs, cuts: 0, merging: false },
});

describe("snapshot write fence: a worker never puts an older outline back", () => {
  it("a snapshot of a later stream sequence wins, whatever else", () => {
    expect(notOlder(at(11, 0, 9), at(10, 5, 0))).toBe(true);
    expect(notOlder(at(10, 5, 0), at(11, 0, 9))).toBe(false);
  });

  it("at the same sequence, the one further along (boundary, fewer jobs pending) wins", () => {
    expect(notOlder(at(10, 6, 0), at(10, 5, 2))).toBe(true);
    expect(notOlder(at(10, 5, 2), at(10, 6, 0))).toBe(false);
    expect(notOlder(at(10, 5, 2), at(10, 5, 2))).toBe(true);
  });

  it("anything unreadable is replaced", () => {
    expect(notOlder(at(1, 0, 0), undefined)).toBe(true);
    expect(notOlder(at(1, 0, 0), {})).toBe(true);
  });
});
