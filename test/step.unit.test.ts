import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { claimId } from "../shared/message-ids.ts";
import type { NodeRef } from "../shared/names.ts";
import { step, type Effect } from "../shared/step.ts";
import { initialThreadState, type ThreadState } from "../shared/thread.ts";
import { makeMessage } from "./support/conversation.ts";

const settings = {
  line: 64,
  tail: [40, 80] as [number, number],
  outline: [400, 800] as [number, number],
  concurrency: 2,
};

/** Folds a log of message numbers through the step with an id index, answering no job. */
function fold(log: number[]): { core: ThreadState; effects: Effect[] } {
  let core = initialThreadState("s1", settings);
  const ids = new Map<string, number>();
  const effects: Effect[] = [];
  log.forEach((i, k) => {
    const message = makeMessage("s1", i, `message ${i} `.repeat(8));
    const seq = k + 1;
    const claim = claimId(ids, message.id, seq);
    const firstSeq = claim.type === "duplicate" ? claim.firstSeq : undefined;
    const next = step(core, {
      type: "message.created",
      message,
      seq,
      ...(firstSeq ? { firstSeq } : {}),
    });
    core = next.core;
    effects.push(...next.effects);
    // Every job answered at once: cuts happen, and ids leave the tail.
    for (let j = 0; j < effects.length; j++) {
      const effect = effects[j] as Effect;
      if (effect.type !== "requestSummary") continue;
      const { level, index } = effect.job;
      const built = step(core, { type: "summary.built", level, index, text: `s${level}:${index}` });
      core = built.core;
      effects.push(...built.effects);
    }
  });
  return { core, effects };
}

describe("the step", () => {
  it("applies each message id once, in the tail or long after it left it", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 120 }), (log) => {
        const { core, effects } = fold(log);
        expect(core.count).toBe(new Set(log).size);
        const skipped = effects.filter((e) => e.type === "skipped");
        expect(skipped).toHaveLength(log.length - new Set(log).size);
        // Most long logs cut: the rule holds past the tail, not only inside it.
        if (log.length > 100) expect(core.boundary).toBeGreaterThan(0);
      }),
    );
  });

  it("names the first copy of a re-published id, so the host can compare the two", () => {
    const { effects } = fold([0, 1, 0]);
    const skip = effects.find((e) => e.type === "skipped");
    expect(skip).toMatchObject({ outcome: { type: "duplicate", firstSeq: 1 }, seq: 3 });
  });

  it("erases on thread.deleted and refuses later messages, reporting each", () => {
    let core = fold([0, 1, 2]).core;
    const deleted = step(core, { type: "thread.deleted", at: "2026-01-02T00:00:00Z", seq: 9 });
    expect(deleted.effects).toEqual([{ type: "erased", thread: "s1", seq: 9 }]);
    core = deleted.core;
    expect(core).toMatchObject({ deleted: true, count: 0, seq: 9 });
    const late = step(core, {
      type: "message.created",
      message: makeMessage("s1", 3, "late"),
      seq: 10,
    });
    expect(late.core).toBe(core);
    expect(late.effects).toMatchObject([{ type: "skipped", outcome: { type: "rejected" } }]);
    const [refusal] = late.effects;
    // The dead letter's reason: the step is the one place a deleted thread's events are decided.
    expect(refusal?.type === "skipped" && refusal.outcome.reason).toMatch(
      /^thread deleted: thread 's1' was deleted \(thread.deleted up to CHAT sequence 9\)/,
    );
    const again = step(core, { type: "thread.deleted", at: "2026-01-03T00:00:00Z", seq: 11 });
    expect(again.core).toBe(core);
    expect(again.effects).toMatchObject([{ type: "skipped", outcome: { type: "duplicate" } }]);
    expect(step(core, { type: "jobs.resume" }).effects).toEqual([]);
  });

  it("claims an id again for the same sequence as new (a redelivery)", () => {
    const ids = new Map<string, number>();
    expect(claimId(ids, "a", 4)).toEqual({ type: "new" });
    expect(claimId(ids, "a", 4)).toEqual({ type: "new" });
    expect(claimId(ids, "a", 7)).toEqual({ type: "duplicate", firstSeq: 4 });
  });
});

/** Messages folded with every job answered as it is asked for: one event each, or together. */
function answered(count: number, together: boolean): ThreadState {
  let core = initialThreadState("s2", settings);
  let asked: NodeRef[] = [];
  const take = (effects: Effect[]) => {
    for (const e of effects) if (e.type === "requestSummary") asked.push(e.job);
  };
  for (let i = 0; i < count; i++) {
    const message = makeMessage("s2", i, `message ${i} `.repeat(1 + (i % 9)));
    const next = step(core, { type: "message.created", message, seq: i + 1 });
    core = next.core;
    take(next.effects);
    while (asked.length > 0) {
      const nodes = asked.map(({ level, index }) => ({ level, index, text: `s${level}:${index}` }));
      asked = [];
      for (const event of together
        ? [{ type: "summaries.built" as const, nodes }]
        : nodes.map((n) => ({ type: "summary.built" as const, ...n }))) {
        const built = step(core, event);
        core = built.core;
        take(built.effects);
      }
    }
  }
  return core;
}

describe("summaries.built", () => {
  it("leaves the thread as the same answers sent one event each do", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 160 }), (count) => {
        const one = answered(count, false);
        expect(answered(count, true)).toEqual(one);
        if (count > 120) expect(one.boundary).toBeGreaterThan(0);
      }),
      { numRuns: 40 },
    );
  });
});
