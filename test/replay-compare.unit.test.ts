import { describe, expect, it } from "vitest";
import { compareSnapshots } from "../services/cli/replay/compare.ts";
import { toSnapshot, type OutlineSnapshot } from "../shared/snapshot.ts";
import { makeMessage } from "./support/conversation.ts";
import { replayWithNodes } from "./support/outline-fixture.ts";
import { SMALL } from "./support/thread-worker.ts";

// `outline replay --verify`: which differences between a stored snapshot and the rebuilt one
// count. Snapshots written by an older version lack what it did not show; they are not wrong.

function rebuilt(messages: number): OutlineSnapshot {
  const log = Array.from({ length: messages }, (_, i) => ({
    message: makeMessage("cmp", i, `message ${i} `.repeat(20)),
    seq: i + 1,
  }));
  return toSnapshot(replayWithNodes("cmp", SMALL, log).state);
}

describe("compareSnapshots", () => {
  it("finds a field the rebuild does not reproduce", () => {
    const now = rebuilt(3);
    expect(compareSnapshots({ ...now, count: 2 }, now)).toEqual([
      { path: "count", stored: 2, rebuilt: 3 },
    ]);
  });

  it("takes an uncut thread's snapshot stored with since null as the same", () => {
    const young = rebuilt(3);
    expect(young.boundary).toBe(0);
    expect(young.since).toBe(makeMessage("cmp", 0, "").at);
    expect(compareSnapshots({ ...young, since: null }, young)).toEqual([]);
    // Once cut, since was always shown: null there is a difference.
    const cut = rebuilt(40);
    expect(cut.boundary).toBeGreaterThan(0);
    expect(compareSnapshots({ ...cut, since: null }, cut)).toEqual([
      { path: "since", stored: null, rebuilt: cut.since },
    ]);
  });

  it("takes a snapshot stored without its settings as the same", () => {
    const now = rebuilt(3);
    expect(compareSnapshots({ ...now, settings: undefined }, now)).toEqual([]);
  });
});
