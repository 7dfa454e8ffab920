import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cutPlan } from "../services/explorer/cut-plan.ts";
import { nextMerge } from "../services/explorer/thread-view.ts";
import { dueScore, mostDuePair } from "../shared/batch.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { appendMessage, initialThreadState } from "../shared/thread.ts";
import { makeMessage, settingsArb, textArb } from "./support/conversation.ts";

// What the explorer marks in the tail (the leaves due, where the next cut falls) and in the
// outline (the pair that merges next) is what the core decides: checked against the core's own
// state over random conversations, no summary answered (so only free nodes are built).

const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);

/** A snapshot with these lines (`[id, n]`) covering [0, boundary). */
function snapshotOf(boundary: number, lines: [number, number][]): OutlineSnapshot {
  return {
    thread: "t",
    count: boundary,
    boundary,
    since: null,
    cutAt: null,
    complete: true,
    bytes: 0,
    seq: 0,
    lines: lines.map(([id, n]) => ({ id, n, level: Math.log2(n), text: "", bytes: 0, until: "" })),
    tail: [],
    tailSeqs: [],
    pending: { jobs: 0, cuts: 0, merging: false },
  };
}

describe("the explorer's cut plan", () => {
  it("marks as due exactly the leaves the core made due, and the cut's messages", () => {
    fc.assert(
      fc.property(
        settingsArb,
        fc.array(textArb, { minLength: 0, maxLength: 60 }),
        (settings, texts) => {
          let state = initialThreadState("t", settings);
          for (const [i, text] of texts.entries()) {
            state = appendMessage(state, makeMessage("t", i, text), i + 1).state;
          }
          const costs = state.tail.map((e) => e.cost);
          const plan = cutPlan(costs, settings.tail[0]);
          expect(state.boundary + plan.due).toBe(state.due);
          expect(plan.leaving).toBe(Math.min(plan.due, Math.max(0, costs.length - 1)));
          expect(plan.tokens).toBe(costs.reduce((a, b) => a + b, 0));
          expect(plan.leavingTokens).toBe(costs.slice(0, plan.leaving).reduce((a, b) => a + b, 0));
          // What stays after such a cut costs at most tail[0], unless only the newest is left.
          const rest = plan.tokens - plan.leavingTokens;
          if (plan.leaving < costs.length - 1) expect(rest).toBeLessThanOrEqual(settings.tail[0]);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("what it says leaves is a floor: the next cut the core plans takes at least as many", () => {
    fc.assert(
      fc.property(
        settingsArb,
        fc.array(textArb, { minLength: 0, maxLength: 60 }),
        (settings, texts) => {
          let state = initialThreadState("t", settings);
          // Plans shown while no cut was pending: [boundary then, messages said to leave].
          let shown: [number, number][] = [];
          for (const [i, text] of texts.entries()) {
            const before = state.planned;
            state = appendMessage(state, makeMessage("t", i, text), i + 1).state;
            if (state.planned > before) {
              for (const [boundary, leaving] of shown)
                expect(state.planned - boundary).toBeGreaterThanOrEqual(leaving);
              shown = [];
            }
            if (state.planned === state.boundary) {
              const plan = cutPlan(
                state.tail.map((e) => e.cost),
                settings.tail[0],
              );
              shown.push([state.boundary, plan.leaving]);
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("marks the pair SPEC §4 names: T=10, outline 0+4 4+4 8+1 9+1 merges 8-9 (due 1)", () => {
    const snapshot = snapshotOf(10, [
      [0, 4],
      [4, 4],
      [8, 1],
      [9, 1],
    ]);
    expect(nextMerge(snapshot)).toEqual({ index: 2, due: 1 });
    expect(dueScore(10, { level: 2, index: 0 })).toBe(0.75);
  });

  it("marks the most due sibling pair of any outline, with the core's score", () => {
    // Any tiling of [0, T) by aligned power-of-two lines, as outlines are.
    const tiling = fc
      .array(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 40 })
      .map((wishes) => {
        const lines: [number, number][] = [];
        let at = 0;
        for (const wish of wishes) {
          let n = 2 ** wish;
          while (at % n !== 0) n /= 2;
          lines.push([at, n]);
          at += n;
        }
        return { boundary: at, lines };
      });
    fc.assert(
      fc.property(tiling, ({ boundary, lines }) => {
        const refs = lines.map(([id, n]) => ({ level: Math.log2(n), index: id / n }));
        const index = mostDuePair(refs, boundary);
        const marked = nextMerge(snapshotOf(boundary, lines));
        if (index < 0) expect(marked).toBeNull();
        else expect(marked).toEqual({ index, due: dueScore(boundary, refs[index]!) });
      }),
      { numRuns: RUNS },
    );
  });
});
