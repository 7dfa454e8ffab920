import { describe, expect, it } from "vitest";
import { step } from "../shared/step.ts";
import { initialThreadState, type ThreadState } from "../shared/thread.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import { makeMessage } from "./support/conversation.ts";

const BIG: CoreSettings = {
  line: 512,
  tail: [2000, 4000],
  outline: [20000, 40000],
  concurrency: 8,
};

function append(s: ThreadState, i: number): ThreadState {
  return step(s, {
    type: "message.created",
    message: makeMessage("t", i, "word ".repeat(60)),
    seq: i + 1,
  }).core;
}

describe("settings.changed", () => {
  it("changes nothing visible until the next message, which then cuts by the smaller tail", () => {
    let s = initialThreadState("t", BIG);
    for (let i = 0; i < 40; i++) s = append(s, i);
    expect(s.cuts.length + s.boundary).toBe(0);
    const changed = step(s, {
      type: "settings.changed",
      settings: { line: 300, tail: [200, 400], outline: [1000, 2000] },
    });
    expect(changed.effects).toEqual([]);
    expect(toSnapshot(changed.core).lines).toEqual(toSnapshot(s).lines);
    expect(toSnapshot(changed.core).settings).toEqual({
      line: 300,
      tail: [200, 400],
      outline: [1000, 2000],
    });
    // Concurrency and group are the worker's, not the thread's: kept.
    expect(changed.core.settings.concurrency).toBe(8);
    const next = append(changed.core, 40);
    expect(next.cuts.length > 0 || next.boundary > 0).toBe(true);
  });
});
