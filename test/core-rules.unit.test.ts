import { describe, expect, it } from "vitest";
import { dueScore, mostDuePair, runBatch, toLine, type Line } from "../shared/batch.ts";
import { jobFor } from "../shared/job-view.ts";
import type { Message } from "../shared/events.ts";
import { lineName, type NodeRef } from "../shared/names.ts";
import { answerAll, answerByRef } from "../shared/replay.ts";
import {
  appendMessage,
  blockingNodes,
  heldBack,
  initialThreadState,
  isAtRest,
  isSettled,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import { fakeSummary, makeMessage } from "./support/conversation.ts";

const settings: CoreSettings = {
  line: 512,
  tail: [200, 400],
  outline: [2000, 4000],
  concurrency: 8,
};

const line = (id: number, n: number, bytes = 10): Line =>
  toLine({ level: Math.log2(n), index: id / n, text: "t".repeat(bytes), until: "" });

function append(state: ThreadState, message: Message): ThreadState {
  const { state: next, outcome } = appendMessage(state, message);
  expect(outcome.type).toBe("applied");
  return next;
}

describe("due score and the most due pair", () => {
  it("SPEC example: with T=10 and 0+4 4+4 8+1 9+1, pair 8–9 (score 1) merges, not 0–7 (0.75)", () => {
    const outline = [line(0, 4), line(4, 4), line(8, 1), line(9, 1)];
    expect(dueScore(10, outline[2] as Line)).toBe(1);
    expect(dueScore(10, outline[0] as Line)).toBe(0.75);
    expect(mostDuePair(outline, 10)).toBe(2);
    const parents: Record<string, string> = { "1:4": "p89", "3:0": "p07" };
    const progress = runBatch(outline, 1000, 10, 0, (l, k) => {
      const text = parents[`${l}:${k}`];
      return text ? { level: l, index: k, text, until: "" } : undefined;
    });
    expect(progress.merged.map(lineName)).toEqual(["8+2", "0+8"]);
  });

  it("ties go to the oldest pair", () => {
    // 0+2,2+2 (level 1, last 3) and 4+1,5+1 (level 0, last 5) both score 2 at T=7.
    const outline = [line(0, 2), line(2, 2), line(4, 1), line(5, 1), line(6, 1)];
    expect(dueScore(7, outline[0] as Line)).toBe(dueScore(7, outline[2] as Line));
    expect(mostDuePair(outline, 7)).toBe(0);
  });

  it("only adjacent siblings pair: 2+2 and 4+2 are neighbours but not siblings", () => {
    expect(mostDuePair([line(0, 2), line(2, 2), line(4, 2)], 6)).toBe(0);
    expect(mostDuePair([line(2, 2), line(4, 2), line(6, 1)], 7)).toBe(-1);
  });
});

describe("summarise ahead and free nodes", () => {
  it("a short thread (tail never past its first number) makes no summarizer call at all", () => {
    // Ten messages of ~750 tokens each: 7,500 < 12,000, so no leaf is ever due.
    let s = initialThreadState("short", { ...settings, tail: [12_000, 48_000] });
    for (let i = 0; i < 10; i++) s = append(s, makeMessage("short", i, "x".repeat(3000)));
    expect(s.wanted).toEqual([]);
    expect(s.stats.leafJobs + s.stats.mergeJobs + s.stats.freeLeaves + s.stats.freeMerges).toBe(0);
    expect(s.boundary).toBe(0);
    // The same messages past tail[0] do ask: the test above is not vacuous.
    for (let i = 10; i < 20; i++) s = append(s, makeMessage("short", i, "x".repeat(3000)));
    expect(s.stats.leafJobs).toBeGreaterThan(0);
  });

  it("a free leaf and a free parent make no summarizer call", () => {
    // Each message alone passes tail[0], so each leaf is due at once.
    let s = initialThreadState("free", { ...settings, tail: [5, 1000] });
    s = append(s, makeMessage("free", 0, "fact 0"));
    s = append(s, makeMessage("free", 1, "fact 1"));
    expect(s.stats).toMatchObject({ freeLeaves: 2, freeMerges: 1, leafJobs: 0, mergeJobs: 0 });
    expect(s.wanted).toEqual([]);
    // A long message is not free: it goes to the summarizer.
    s = append(s, makeMessage("free", 2, "long ".repeat(200)));
    expect(s.wanted).toEqual([{ level: 0, index: 2 }]);
  });

  it("an empty or blank text is a message like any other: applied, its leaf `from: ` and free", () => {
    let s = initialThreadState("quiet", { ...settings, tail: [5, 1000] });
    s = append(s, { ...makeMessage("quiet", 0, ""), from: "ana" });
    s = append(s, { ...makeMessage("quiet", 1, "  \n "), from: "bo" });
    s = append(s, makeMessage("quiet", 2, "a word after the silence"));
    expect(s.count).toBe(3);
    expect(s.stats).toMatchObject({ leafJobs: 0 });
    const leaves = [...s.outbox].filter((n) => n.level === 0).map((n) => n.text);
    expect(leaves.slice(0, 2)).toEqual(["ana: ", "bo: "]);
  });

  it("a leaf is due once the tail from it to the end costs more than tail[0], in position order", () => {
    let s = initialThreadState("due", { ...settings, tail: [100, 1000] });
    const big = "y".repeat(2000); // ~500 tokens: never free, always due after one more
    s = append(s, makeMessage("due", 0, big));
    expect(s.wanted).toEqual([{ level: 0, index: 0 }]); // alone it costs > 100: due
    s = append(s, makeMessage("due", 1, big));
    expect(s.wanted).toEqual([
      { level: 0, index: 0 },
      { level: 0, index: 1 },
    ]);
    expect(s.boundary).toBe(0); // 1000 tokens not passed yet: no cut
  });
});

describe("cuts", () => {
  it("a cut waits for a slow leaf while new messages keep arriving, then applies in one step", () => {
    let s = initialThreadState("slow", { ...settings, tail: [300, 600], concurrency: 1 });
    const text = (i: number) => `message ${i} ` + "z".repeat(700);
    let i = 0;
    while (s.cuts.length === 0) s = append(s, makeMessage("slow", i++, text(i)));
    const planned = s.cuts[0]?.boundary ?? 0;
    expect(planned).toBeGreaterThan(0);
    expect(s.boundary).toBe(0);
    const taken = takeJobs(s, 1);
    s = taken.state;
    const slow = taken.started[0] as NodeRef;
    expect(slow).toEqual({ level: 0, index: 0 });
    for (let k = 0; k < 5; k++) s = append(s, makeMessage("slow", i++, text(i)));
    expect(s.boundary).toBe(0); // still waiting for leaf 0
    expect(s.count).toBe(i);
    // Every other job answered: the cut still waits for the slow one.
    for (;;) {
      const next = takeJobs(s, 100);
      const others = next.started.filter((r) => !(r.level === 0 && r.index === 0));
      if (others.length === 0) break;
      s = next.state;
      for (const ref of others) s = summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
    }
    expect(s.boundary).toBe(0);
    s = summaryBuilt(s, slow, "the slow leaf").state;
    expect(s.boundary).toBeGreaterThanOrEqual(planned);
    expect(s.outline[0]?.text).toBe("the slow leaf");
    expect(s.since).toBe(s.tail[0]?.message.at);
  });

  it("the newest message always stays whole, however big", () => {
    let s = initialThreadState("huge", settings);
    s = append(s, makeMessage("huge", 0, "a".repeat(100)));
    s = append(s, makeMessage("huge", 1, "b".repeat(50_000)));
    s = answerAll(s, fakeSummary);
    expect(s.boundary).toBe(1);
    expect(s.tail.map((t) => t.position)).toEqual([1]);
  });

  it("a result for a node already built is ignored", () => {
    let s = initialThreadState("twice", { ...settings, tail: [10, 1000] });
    s = append(s, makeMessage("twice", 0, "q".repeat(3000)));
    const taken = takeJobs(s);
    s = summaryBuilt(taken.state, { level: 0, index: 0 }, "first").state;
    const again = summaryBuilt(s, { level: 0, index: 0 }, "second");
    expect(again.outcome.type).toBe("ignored");
    expect(again.state).toBe(s);
  });
});

describe("merge batches", () => {
  it("a batch waits for a parent being built, then finishes", () => {
    const small: CoreSettings = { line: 64, tail: [20, 40], outline: [300, 600], concurrency: 8 };
    let s = initialThreadState("batch", small);
    let i = 0;
    let waited: NodeRef | null = null;
    const held: NodeRef[] = [];
    // Build leaves at once but hold every merge job, until a batch needs one.
    while (!waited && i < 500) {
      s = append(s, makeMessage("batch", i++, `${"m".repeat(60)} ${i}`));
      const taken = takeJobs(s, 1000);
      s = taken.state;
      for (const ref of taken.started) {
        if (ref.level === 0) s = summaryBuilt(s, ref, `leaf ${ref.index} ${"l".repeat(40)}`).state;
        else held.push(ref);
      }
      waited = s.batch?.waitingFor ?? null;
    }
    expect(waited).not.toBeNull();
    const parent = waited as NodeRef;
    expect(s.inflight).toContainEqual(parent);
    const before = s.outlineBytes;
    expect(before).toBeGreaterThan(small.outline[0]);
    const boundary = s.boundary;
    s = append(s, makeMessage("batch", i++, "more while merging")); // arrives meanwhile
    expect(s.boundary).toBe(boundary);
    for (const ref of held) s = summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
    s = answerAll(s, fakeSummary);
    expect(s.batch).toBeNull();
    expect(s.outlineBytes).toBeLessThanOrEqual(small.outline[0]);
    expect(isSettled(s)).toBe(true);
  });

  it("parents are asked for eagerly, as soon as both children exist", () => {
    let s = initialThreadState("eager", { ...settings, tail: [10, 100_000] });
    s = append(s, makeMessage("eager", 0, "e".repeat(3000)));
    s = append(s, makeMessage("eager", 1, "f".repeat(3000)));
    s = append(s, makeMessage("eager", 2, "g".repeat(3000)));
    const taken = takeJobs(s);
    s = taken.state;
    s = summaryBuilt(s, { level: 0, index: 0 }, "x".repeat(300)).state;
    s = summaryBuilt(s, { level: 0, index: 1 }, "y".repeat(300)).state;
    expect(s.wanted).toContainEqual({ level: 1, index: 0 });
    expect(s.boundary).toBe(0); // nothing cut: the parent is built ahead of need
  });
});

describe("summarizer groups (HISTORY_GROUP)", () => {
  const grouped: CoreSettings = { ...settings, tail: [10, 100_000], group: 4 };
  const big = (i: number) => `message ${i} ${"q".repeat(3000)}`;

  it("due nodes wait until a whole group is wanted, then go together", () => {
    let s = initialThreadState("g1", grouped);
    for (let i = 0; i < 3; i++) s = append(s, makeMessage("g1", i, big(i)));
    // Three leaves are due (each leaves at the next cut) but a group is four.
    expect(s.wanted).toHaveLength(3);
    expect(heldBack(s)).toBe(3);
    expect(takeJobs(s).started).toEqual([]);
    expect(isAtRest(s)).toBe(true);
    expect(toSnapshot(s).pending).toMatchObject({ jobs: 0, held: 3 });
    s = append(s, makeMessage("g1", 3, big(3)));
    expect(heldBack(s)).toBe(0);
    const taken = takeJobs(s);
    expect(taken.started.map((r) => r.index)).toEqual([0, 1, 2, 3]);
    expect(isAtRest(taken.state)).toBe(false);
    // A fifth due leaf waits for the next group while the first is out.
    s = append(taken.state, makeMessage("g1", 4, big(4)));
    expect(takeJobs(s).started).toEqual([]);
    expect(heldBack(s)).toBe(1);
  });

  it("a cut waiting for its leaves takes them at once, group full or not", () => {
    let s = initialThreadState("g2", { ...settings, tail: [300, 600], group: 16 });
    let i = 0;
    while (s.cuts.length === 0) s = append(s, makeMessage("g2", i++, big(i)));
    expect(s.wanted.length).toBeGreaterThan(0);
    expect(s.wanted.length).toBeLessThan(16);
    expect(heldBack(s)).toBe(0);
    const taken = takeJobs(s);
    expect(taken.started).toHaveLength(s.wanted.length);
    let t = taken.state;
    for (const ref of taken.started) t = summaryBuilt(t, ref, fakeSummary(jobFor(t, ref))).state;
    expect(t.boundary).toBeGreaterThan(0);
  });

  it("hold: false hands out held nodes too; group 1 or unset never holds", () => {
    let s = initialThreadState("g3", grouped);
    s = append(s, makeMessage("g3", 0, big(0)));
    expect(takeJobs(s).started).toEqual([]);
    expect(takeJobs(s, undefined, false).started).toEqual([{ level: 0, index: 0 }]);
    for (const group of [1, undefined]) {
      let u = initialThreadState("g4", { ...grouped, group });
      u = append(u, makeMessage("g4", 0, big(0)));
      expect(heldBack(u)).toBe(0);
      expect(takeJobs(u).started).toEqual([{ level: 0, index: 0 }]);
    }
  });

  it("the in-flight bound is concurrency groups: concurrency × group nodes", () => {
    let s = initialThreadState("g5", { ...grouped, concurrency: 2 });
    for (let i = 0; i < 12; i++) s = append(s, makeMessage("g5", i, big(i)));
    const taken = takeJobs(s);
    expect(taken.started).toHaveLength(8);
    expect(taken.state.wanted).toHaveLength(4);
  });
});

describe("answering without every text (a replay of held nodes)", () => {
  it("a node without a text stays wanted; blockingNodes names the leaves a planned cut waits for", () => {
    let s = initialThreadState("nt", { ...settings, tail: [300, 600] });
    let i = 0;
    const big = (k: number) => `message ${k} ${"q".repeat(3000)}`;
    while (s.cuts.length === 0) s = append(s, makeMessage("nt", i++, big(i)));
    const cut = s.cuts[0]?.boundary ?? 0;
    // Leaf 0 has no text: everything else is answered, the cut cannot happen.
    s = answerByRef(s, (ref, st) =>
      ref.level === 0 && ref.index === 0 ? undefined : fakeSummary(jobFor(st, ref)),
    );
    expect(s.wanted).toEqual([{ level: 0, index: 0 }]);
    expect(s.boundary).toBe(0);
    expect(blockingNodes(s)).toEqual([{ level: 0, index: 0 }]);
    s = answerByRef(s, (ref, st) => fakeSummary(jobFor(st, ref)));
    expect(s.boundary).toBeGreaterThanOrEqual(cut);
    expect(blockingNodes(s)).toEqual([]);
  });
});
