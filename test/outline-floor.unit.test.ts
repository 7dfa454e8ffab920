import { describe, expect, it } from "vitest";
import { OutlineFloor } from "../services/thread-worker/outline-floor.ts";
import type { Logger } from "../services/thread-worker/log.ts";
import { jobFor } from "../shared/job-view.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  appendMessage,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  withSettings,
  type ThreadState,
} from "../shared/thread.ts";
import { fakeSummary } from "./support/conversation.ts";
import { chatMessage } from "./support/thread-worker.ts";

const FIRST: CoreSettings = { line: 256, tail: [300, 600], outline: [1500, 3000], concurrency: 4 };
const LOW = {
  line: 256,
  tail: [300, 600] as [number, number],
  outline: [512, 520] as [number, number],
};

/** The thread after `to` messages, under FIRST and from message `lowFrom` under LOW. */
function thread(to: number, lowFrom = Number.POSITIVE_INFINITY): ThreadState {
  let s = initialThreadState("t", FIRST);
  for (let i = 0; i < to; i++) {
    if (i === lowFrom) s = withSettings(s, LOW);
    s = appendMessage(s, chatMessage("t", i), i + 1).state;
    for (;;) {
      s = outboxPublished(s, s.outbox.length);
      const taken = takeJobs(s, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      s = taken.state;
      for (const ref of taken.started) s = summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
    }
  }
  return s;
}

function logger() {
  const warnings: { message: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = {
    info: () => {},
    error: () => {},
    warn: (message, fields) => void warnings.push({ message, fields }),
  };
  return { log, warnings };
}

describe("OutlineFloor", () => {
  // Lowered at message 80: every cut from 83 to 127 leaves the outline over 520 bytes, one line
  // per level (the pure core's own run of this log), 693 bytes after message 85.
  const stuck = thread(86, 80);
  const stuckLater = thread(128, 80);

  it("tells once per thread, naming it, its bytes, outline[1] and what to set", () => {
    expect(stuck.outlineBytes).toBeGreaterThan(520);
    const { log, warnings } = logger();
    const floor = new OutlineFloor(log);
    floor.afterCuts("t", stuck);
    floor.afterCuts("t", stuckLater);
    floor.afterCuts("t", stuck);
    expect(warnings).toHaveLength(1);
    const { message, fields } = warnings[0] as (typeof warnings)[number];
    expect(message).toBe(
      `thread 't': its outline is ${stuck.outlineBytes} bytes, over HISTORY_OUTLINE's 520 (outline[1]), and none of its ${stuck.outline.length} lines can merge (merges pair two lines of one level; it holds one line per level for ${stuck.boundary} messages): it stays over until the thread grows. Set HISTORY_OUTLINE to at least 2408,4816: up to 7 levels of 256-byte lines now, one level more each time the thread doubles (docs/settings.md, "The outline's floor")`,
    );
    expect(fields).toEqual({
      thread: "t",
      bytes: stuck.outlineBytes,
      outline: [512, 520],
      lines: stuck.outline.length,
      messages: stuck.boundary,
    });
  });

  it("tells again once the outline was back within outline[1] and is over again", () => {
    const { log, warnings } = logger();
    const floor = new OutlineFloor(log);
    floor.afterCuts("t", stuck);
    floor.afterCuts("t", withSettings(stuck, { ...LOW, outline: [2000, 4000] }));
    floor.afterCuts("t", stuck);
    expect(warnings).toHaveLength(2);
  });

  it("says nothing while a pair is left to merge (outline lowered, no cut yet)", () => {
    const before = thread(80);
    const lowered = withSettings(before, LOW);
    expect(lowered.outlineBytes).toBeGreaterThan(520);
    const { log, warnings } = logger();
    new OutlineFloor(log).afterCuts("t", lowered);
    expect(warnings).toHaveLength(0);
  });

  it("remembers a bounded number of threads: the longest told is forgotten first", () => {
    const { log, warnings } = logger();
    const floor = new OutlineFloor(log);
    for (let i = 0; i <= 10_000; i++) floor.afterCuts(`t${i}`, stuck);
    floor.afterCuts("t10000", stuck);
    floor.afterCuts("t1", stuck);
    expect(warnings).toHaveLength(10_001);
    floor.afterCuts("t0", stuck);
    expect(warnings).toHaveLength(10_002);
  });
});
