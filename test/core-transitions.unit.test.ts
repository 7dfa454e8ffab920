import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerAll } from "../shared/replay.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  appendAll,
  appendMessage,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import { mostDuePair, runBatch, toLine, type Line } from "../shared/batch.ts";
import { utf8Bytes } from "../shared/bytes.ts";
import { lineBytes, renderLine } from "../shared/render.ts";
import { estimateTextTokens } from "../shared/tokens.ts";
import { jobFor } from "../shared/job-view.ts";
import type { NodeRef } from "../shared/names.ts";
import type { BuiltNode } from "../shared/nodes.ts";
import { fakeSummary, makeMessage, settingsArb, textArb } from "./support/conversation.ts";

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

/** Freezes a state and everything in it: a transition that changed its input would throw. */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe("transitions never modify their input (they copy what they change, once)", () => {
  it("appendMessage, answerAll, appendAll, takeJobs and summaryBuilt on frozen states", () => {
    fc.assert(
      fc.property(
        settingsArb,
        fc.array(textArb, { minLength: 1, maxLength: 120 }),
        (settings, texts) => {
          let a = initialThreadState("f", settings);
          let b = a;
          // Also in chunks of a few messages, each chunk one transition.
          let c = a;
          const log = texts.map((text, i) => ({ message: makeMessage("f", i, text), seq: i + 1 }));
          for (let i = 0; i < log.length; i += 1 + (i % 5)) {
            const chunk = log.slice(i, i + 1 + (i % 5));
            c = appendAll(deepFreeze(c), chunk, (ref, st) => fakeSummary(jobFor(st, ref))).state;
          }
          texts.forEach((text, i) => {
            const message = makeMessage("f", i, text);
            // All jobs at once in one transition...
            const before = JSON.stringify(deepFreeze(a));
            a = answerAll(appendMessage(deepFreeze(a), message, i + 1).state, fakeSummary);
            expect(JSON.stringify(a)).not.toBe(before);
            // ...and one job per transition, from frozen states: the same state.
            b = appendMessage(deepFreeze(b), message, i + 1).state;
            for (;;) {
              const taken = takeJobs(deepFreeze(b), 1, false);
              if (taken.started.length === 0) break;
              const ref = taken.started[0] as NonNullable<(typeof taken.started)[0]>;
              const job = jobFor(deepFreeze(taken.state), ref);
              b = summaryBuilt(deepFreeze(taken.state), ref, fakeSummary(job)).state;
            }
            b = outboxPublished(deepFreeze(b), b.outbox.length);
            expect(JSON.stringify(b)).toBe(JSON.stringify(a));
          });
          expect(JSON.stringify(c)).toBe(JSON.stringify(a));
        },
      ),
      { numRuns: runs },
    );
  });
});

/** The batch as a scan of the outline per merge (what runBatch did before its heap). */
function scanBatch(
  lines: readonly Line[],
  bytes: number,
  boundary: number,
  low: number,
  parentOf: (level: number, index: number) => BuiltNode | undefined,
) {
  const out = lines.slice();
  const merged: NodeRef[] = [];
  let total = bytes;
  while (total > low) {
    const j = mostDuePair(out, boundary);
    if (j < 0) break;
    const left = out[j] as Line;
    const right = out[j + 1] as Line;
    const parentRef = { level: left.level + 1, index: left.index >> 1 };
    const parent = parentOf(parentRef.level, parentRef.index);
    if (!parent) return { lines: out, bytes: total, merged, waitingFor: parentRef };
    const line = toLine(parent);
    out.splice(j, 2, line);
    total += line.bytes - left.bytes - right.bytes;
    merged.push(parentRef);
  }
  return { lines: out, bytes: total, merged };
}

describe("merge batch", () => {
  it("chooses the pairs a scan for the most due pair would, and stops where it would", () => {
    fc.assert(
      fc.property(
        // An outline as a run of nodes of random levels (each aligned), parent text sizes, which
        // parents are built, and the low mark.
        fc.array(fc.nat(4), { minLength: 1, maxLength: 200 }),
        fc.array(fc.nat(300), { minLength: 1, maxLength: 50 }),
        fc.nat(),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (levels, sizes, missing, lowShare) => {
          const lines: Line[] = [];
          let at = 0;
          let bytes = 0;
          for (const l of levels) {
            const n = 2 ** l;
            const level = at % n === 0 ? l : 0;
            const node = {
              level,
              index: at / 2 ** level,
              text: "t".repeat(5 + (at % 40)),
              until: "",
            };
            const line = toLine(node);
            lines.push(line);
            bytes += line.bytes;
            at += 2 ** level;
          }
          const parentOf = (level: number, index: number): BuiltNode | undefined => {
            const k = level * 7919 + index;
            if (missing % 5 !== 0 && k % (2 + (missing % 11)) === 0) return undefined;
            const size = sizes[k % sizes.length] ?? 10;
            return { level, index, text: "p".repeat(1 + size), until: "" };
          };
          const low = Math.floor(bytes * lowShare);
          const ours = runBatch(lines, bytes, at + (missing % 7), low, parentOf);
          const scan = scanBatch(lines, bytes, at + (missing % 7), low, parentOf);
          expect(ours.merged).toEqual(scan.merged);
          expect(ours.bytes).toBe(scan.bytes);
          expect(ours.waitingFor).toEqual(scan.waitingFor);
          expect(ours.lines.map((l) => [l.level, l.index])).toEqual(
            scan.lines.map((l) => [l.level, l.index]),
          );
        },
      ),
      { numRuns: runs * 10 },
    );
  });
});

describe("text measures (ASCII fast paths)", () => {
  it("utf8Bytes and lineBytes are UTF-8 lengths, estimateTextTokens the per-character rule", () => {
    // Texts without surrogates: one UTF-16 unit a character.
    const reference = (text: string): number => {
      let quarter = 0;
      for (const ch of text) {
        const c = ch.charCodeAt(0);
        if (c < 0x80) quarter += 1;
        else if (
          (c >= 0x3000 && c <= 0x9fff) ||
          (c >= 0xac00 && c <= 0xd7af) ||
          (c >= 0xf900 && c <= 0xfaff)
        )
          quarter += 4;
        else if (c >= 0x2600 && c <= 0x27bf) quarter += 6;
        else quarter += 2;
      }
      return Math.ceil(quarter / 4);
    };
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: "binary-ascii", maxLength: 600 }),
          fc.string({ unit: "grapheme", maxLength: 200 }),
          fc.string({ unit: "binary", maxLength: 200 }),
        ),
        (text) => {
          expect(utf8Bytes(text)).toBe(encoder.encode(text).length);
          const node = { level: text.length % 5, index: text.length * 37 };
          expect(lineBytes(node, text)).toBe(encoder.encode(renderLine(node, text)).length + 1);
          if (!/[\ud800-\udfff]/.test(text)) expect(estimateTextTokens(text)).toBe(reference(text));
        },
      ),
      { numRuns: runs * 10 },
    );
  });
});
