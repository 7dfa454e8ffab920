import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerAll } from "../shared/replay.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { appendMessage, initialThreadState, type ThreadState } from "../shared/thread.ts";
import { fakeSummary, makeMessage } from "./support/conversation.ts";

const runs = Number(process.env.PROPERTY_RUNS ?? 40);

const settings: CoreSettings = {
  line: 512,
  tail: [60, 120],
  outline: [2000, 4000],
  concurrency: 8,
};

/** What the duplicate check must answer: a scan of the tail. */
const inTail = (s: ThreadState, id: string): boolean => s.tail.some((e) => e.message.id === id);

describe("duplicate message ids (the core's check against the tail)", () => {
  it("answers as a scan of the tail would, also from older states used again", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ id: fc.nat(30), from: fc.nat(), size: fc.nat(300) }), {
          minLength: 1,
          maxLength: 200,
        }),
        (steps) => {
          // Every state reached; each step continues from one of them (mostly the newest), so
          // lines of states branch off as a retry or a restore would.
          const states: ThreadState[] = [initialThreadState("d", settings)];
          steps.forEach((step, i) => {
            const from =
              step.from % 4 === 0
                ? (states[step.from % states.length] as ThreadState)
                : (states[states.length - 1] as ThreadState);
            const message = {
              ...makeMessage("d", i, "x".repeat(step.size)),
              id: `d-${step.id}`,
            };
            const expected = inTail(from, message.id) ? "duplicate" : "applied";
            const { state, outcome } = appendMessage(from, message);
            expect(outcome.type).toBe(expected);
            if (outcome.type === "applied") {
              states.push(answerAll(state, fakeSummary));
            }
          });
        },
      ),
      { numRuns: runs },
    );
  });

  it("an id that left the tail at a cut is not in it any more", () => {
    let s = initialThreadState("d", settings);
    for (let i = 0; i < 40; i++) {
      s = answerAll(appendMessage(s, makeMessage("d", i, "y".repeat(200))).state, fakeSummary);
    }
    expect(s.boundary).toBeGreaterThan(0);
    const left = makeMessage("d", 0, "again");
    expect(inTail(s, left.id)).toBe(false);
    expect(appendMessage(s, left).outcome.type).toBe("applied");
    const kept = makeMessage("d", 39, "again");
    expect(appendMessage(s, kept).outcome.type).toBe("duplicate");
  });
});
