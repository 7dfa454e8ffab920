import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mostDuePair } from "../shared/batch.ts";
import { utf8Bytes } from "../shared/bytes.ts";
import { jobFor } from "../shared/job-view.ts";
import { nodeId, nodeSize, type NodeRef } from "../shared/names.ts";
import { buildOpenAIPrompt } from "../shared/prompt.ts";
import { replayLog } from "../shared/replay.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import {
  appendMessage,
  initialThreadState,
  heldBack,
  isSettled,
  outboxPublished,
  restartJobs,
  summariesBuilt,
  summaryBuilt,
  summaryFailed,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import { fakeSummary, makeMessage, settingsArb, textArb } from "./support/conversation.ts";

const runs = Number(process.env.PROPERTY_RUNS ?? 40);

/** SPEC §4 invariants that hold after every step, whatever the summarizer does. */
function checkInvariants(s: ThreadState): void {
  const fail = (what: string): never => {
    throw new Error(`invariant broken: ${what}`);
  };
  let next = 0;
  let bytes = 0;
  const limit = Math.floor(s.settings.line * 1.25);
  for (const line of s.outline) {
    if (nodeId(line) !== next) fail(`outline has a gap or overlap at ${next}`);
    next += nodeSize(line);
    bytes += line.bytes;
    if (utf8Bytes(line.text) > limit) fail(`line ${nodeId(line)} over ${limit} bytes`);
  }
  if (next !== s.boundary) fail(`outline ends at ${next}, boundary is ${s.boundary}`);
  if (bytes !== s.outlineBytes) fail(`outline bytes ${s.outlineBytes} != sum ${bytes}`);
  // The outline only changes at a cut, and a cut that passes outline[1] merges in the same step.
  if (s.outlineBytes > s.settings.outline[1])
    fail(`outline ${s.outlineBytes} > ${s.settings.outline[1]}`);
  if (s.tail.length !== s.count - s.boundary) fail("tail does not hold [boundary, count)");
  s.tail.forEach((t, k) => t.position === s.boundary + k || fail(`tail position ${t.position}`));
  // SPEC §2: since is the `at` of the first message still whole, cut yet or not.
  const since = toSnapshot(s).since;
  if (since !== (s.tail[0]?.message.at ?? null)) fail(`snapshot since ${since}`);
}

interface Scenario {
  settings: CoreSettings;
  texts: string[];
  /** Drives the interleaving: which event comes next and which job answers. */
  choices: number[];
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  settings: settingsArb,
  texts: fc.array(textArb, { minLength: 1, maxLength: 300, size: "max" }),
  choices: fc.array(fc.nat(), { minLength: 1, maxLength: 64, size: "max" }),
});

const logOf = (thread: string, texts: string[]) =>
  texts.map((text, i) => ({ message: makeMessage(thread, i, text), seq: i + 1 }));

/**
 * Runs a conversation with the summarizer answering in a random order, sometimes failing, with
 * at most `concurrency` groups of jobs out; optionally persists and restores (JSON) at one step.
 */
function simulate(sc: Scenario, thread: string, restoreAt = -1): ThreadState {
  const log = logOf(thread, sc.texts);
  let s = initialThreadState(thread, sc.settings);
  let i = 0;
  let step = 0;
  let failures = 0;
  const published = new Set<string>();
  for (;;) {
    const choice = sc.choices[step % sc.choices.length] ?? 0;
    step += 1;
    if (step === restoreAt) {
      s = restartJobs(JSON.parse(JSON.stringify(s)) as ThreadState);
    }
    // Once the log is over, nodes held for their group are flushed so the run can finish.
    s = takeJobs(s, undefined, i < log.length).state;
    const limit = sc.settings.concurrency * (sc.settings.group ?? 1);
    expect(s.inflight.length).toBeLessThanOrEqual(limit);
    // Below the limit, what stays wanted is exactly what is held for its group to fill.
    if (i < log.length && s.inflight.length < limit) expect(s.wanted.length).toBe(heldBack(s));
    const deliver = i < log.length && (s.inflight.length === 0 || choice % 3 === 0);
    if (deliver) {
      const entry = log[i++];
      if (entry) s = appendMessage(s, entry.message, entry.seq).state;
    } else if (s.inflight.length > 0) {
      const ref = s.inflight[(choice >> 2) % s.inflight.length];
      // Bounded failures: an endless outage is another test's business.
      if (ref && choice % 7 === 1 && failures++ < 20) s = summaryFailed(s, ref);
      else if (ref) s = summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
    } else if (i >= log.length) break;
    checkInvariants(s);
    // The host publishes free nodes as they come; every one is a node of this thread, once.
    for (const node of s.outbox) {
      const key = `${node.level}:${node.index}`;
      if (published.has(key)) throw new Error(`free node ${key} published twice`);
      published.add(key);
    }
    s = outboxPublished(s, s.outbox.length);
  }
  expect(isSettled(s)).toBe(true);
  return s;
}

describe("outline properties over random conversations", () => {
  it("tiles [0, boundary), keeps line and outline bounds, under random summarizer timing", () => {
    const seen = { cut: 0, batch: 0, waited: 0 };
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        const s = simulate(sc, "p1");
        if (s.stats.cuts > 0) seen.cut++;
        if (s.stats.batches > 0) seen.batch++;
        if (s.stats.mergeJobs > 0 && s.stats.batches > 0) seen.waited++;
      }),
      { numRuns: runs },
    );
    // The generated conversations do exercise cuts and batches, not only short threads.
    expect(seen.cut, JSON.stringify(seen)).toBeGreaterThan(runs / 2);
    expect(seen.batch, JSON.stringify(seen)).toBeGreaterThan(runs / 10);
  });

  it("the final state is a pure function of the log and the summaries, whatever the timing", () => {
    fc.assert(
      fc.property(scenarioArb, fc.array(fc.nat(), { minLength: 1, maxLength: 64 }), (sc, other) => {
        const reference = replayLog(
          initialThreadState("p2", sc.settings),
          logOf("p2", sc.texts),
          fakeSummary,
        );
        checkInvariants(reference);
        expect(simulate(sc, "p2")).toEqual(reference);
        expect(simulate({ ...sc, choices: other }, "p2")).toEqual(reference);
      }),
      { numRuns: runs },
    );
  });

  it("a persisted state restored at a random point ends as an uninterrupted run", () => {
    fc.assert(
      fc.property(scenarioArb, fc.nat({ max: 400 }), (sc, at) => {
        const reference = simulate(sc, "p3");
        expect(simulate(sc, "p3", at + 1)).toEqual(reference);
      }),
      { numRuns: runs },
    );
  });

  it("a finished batch leaves the outline at most outline[0], unless no sibling pair is left", () => {
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        let s = initialThreadState("p4", sc.settings);
        for (const entry of logOf("p4", sc.texts)) {
          const before = s.stats.batches;
          s = replayLog(s, [entry], fakeSummary);
          if (s.stats.batches > before) {
            if (s.outlineBytes > sc.settings.outline[0])
              expect(mostDuePair(s.outline, s.boundary)).toBe(-1);
          }
        }
      }),
      { numRuns: runs },
    );
  });

  it("between two cuts each prompt is the previous one plus new messages at its end, byte for byte", () => {
    fc.assert(
      fc.property(scenarioArb, fc.constantFrom("north", "Ana"), (sc, agent) => {
        let s = initialThreadState("p5", sc.settings);
        let previous: string | null = null;
        let cuts = 0;
        for (const entry of logOf("p5", sc.texts)) {
          s = replayLog(s, [entry], fakeSummary);
          const prompt = buildOpenAIPrompt({
            agent,
            lines: s.outline.map((l) => ({
              id: nodeId(l),
              n: nodeSize(l),
              text: l.text,
              until: l.until,
            })),
            cutAt: s.cutAt,
            tail: s.tail.map((t) => t.message),
          });
          const json = JSON.stringify(prompt.messages);
          if (previous !== null && s.stats.cuts === cuts) {
            expect(json.startsWith(previous.slice(0, -1))).toBe(true);
            expect(json.length).toBeGreaterThan(previous.length);
          }
          previous = json;
          cuts = s.stats.cuts;
        }
      }),
      { numRuns: runs },
    );
  });
});

describe("summaries that come back together", () => {
  it("leave the state summaryBuilt leaves for each in turn, ignored and repeated nodes included", () => {
    fc.assert(
      fc.property(scenarioArb, (sc) => {
        const log = logOf("p9", sc.texts);
        let s = initialThreadState("p9", sc.settings);
        let i = 0;
        for (let step = 0; step < 4 * log.length + 64; step++) {
          const choice = sc.choices[step % sc.choices.length] ?? 0;
          s = takeJobs(s, undefined, i < log.length).state;
          const awaited = [...s.inflight, ...s.wanted];
          if (i < log.length && (awaited.length === 0 || choice % 3 === 0)) {
            const entry = log[i++];
            if (entry) s = appendMessage(s, entry.message, entry.seq).state;
          } else if (awaited.length > 0) {
            // A batch of awaited nodes in a scrambled order, with a repeat and an unknown node.
            const picked: NodeRef[] = [];
            for (let k = 0; k <= choice % 5; k++) {
              const ref = awaited[(choice + k * 7) % awaited.length];
              if (ref) picked.push(ref);
            }
            if (choice % 4 === 1) picked.push(picked[0] as NodeRef);
            if (choice % 5 === 2) picked.unshift({ level: 9, index: 9 });
            const nodes = picked.map((ref) => ({
              level: ref.level,
              index: ref.index,
              text: ref.level === 9 ? "not awaited" : fakeSummary(jobFor(s, ref)),
            }));
            let one = s;
            for (const node of nodes) one = summaryBuilt(one, node, node.text).state;
            const together = summariesBuilt(s, nodes);
            expect(together).toEqual(one);
            s = together;
          } else break;
          checkInvariants(s);
          s = outboxPublished(s, s.outbox.length);
        }
      }),
      { numRuns: runs },
    );
  });
});
