import { describe, expect, it } from "vitest";
import type { SummaryEvent } from "../shared/history.ts";
import type { LeafJob } from "../shared/jobs.ts";
import type { NodeRef } from "../shared/names.ts";
import type { MeteredSummarizer } from "../services/summarizer/index.ts";
import { noUsage } from "../services/summarizer/usage.ts";
import type { HistoryNodes } from "../services/thread-worker/history-nodes.ts";
import { Limiter } from "../services/thread-worker/limiter.ts";
import { METRIC, workerMetrics } from "../services/thread-worker/metrics.ts";
import { Refusals } from "../services/thread-worker/refusals.ts";
import { DEFAULT_JOB_TIMING, SummaryJobs } from "../services/thread-worker/summary-jobs.ts";

/** HISTORY in memory, as history-nodes.ts answers: the first node published wins. */
function fakeHistory() {
  const stored = new Map<string, SummaryEvent>();
  const key = (level: number, index: number) => `${level}:${index}`;
  let reads = 0;
  const history: HistoryNodes = {
    read: (_thread, level, index) => {
      reads += 1;
      return Promise.resolve(stored.get(key(level, index)));
    },
    publish: (event) => {
      const held = stored.get(key(event.level, event.index));
      if (held) return Promise.resolve(held);
      stored.set(key(event.level, event.index), event);
      return Promise.resolve(event);
    },
    recordSettings: () => Promise.resolve(),
  };
  return { history, stored, reads: () => reads };
}

const leaf = (index: number): LeafJob => ({
  kind: "leaf",
  thread: "t",
  level: 0,
  index,
  name: `${index}+1`,
  line: 512,
  context: [],
  seq: index + 1,
  message: {
    id: `m${index}`,
    thread: "t",
    at: "2026-03-01T10:00:00.000Z",
    from: "Ana",
    role: "user",
    text: `message ${index}`,
    position: index,
  },
});

function jobsWith(cheap: boolean) {
  const { history, stored, reads } = fakeHistory();
  const metrics = workerMetrics();
  let calls = 0;
  const summarizer: MeteredSummarizer = {
    name: "fake",
    cheap,
    summarize: (job) => {
      calls += 1;
      return Promise.resolve({ text: `built ${job.name}` });
    },
    usage: noUsage,
  };
  const built = new Map<string, string>();
  const jobs = new SummaryJobs({
    summarizer,
    limiter: new Limiter(1),
    history,
    metrics,
    log: { info: () => {}, warn: () => {}, error: () => {} },
    timing: DEFAULT_JOB_TIMING,
    refusals: new Refusals(DEFAULT_JOB_TIMING),
    built: (ref: NodeRef, text: string) => built.set(`${ref.level}:${ref.index}`, text),
    failed: () => {},
  });
  const run = async (job: LeafJob) => {
    jobs.start({ job, until: job.message.at });
    while (jobs.active > 0) await new Promise((r) => setImmediate(r));
  };
  return { run, stored, reads, built, metrics, calls: () => calls };
}

/** Node 0:0 as HISTORY holds it from an earlier build. */
const STORED_BEFORE = {
  thread: "t",
  level: 0,
  index: 0,
  text: "stored before",
  until: "",
  by: "x",
};

describe("summary jobs with a cheap summarizer", () => {
  it("build without reading HISTORY first; a node stored before keeps its text", async () => {
    const cheap = jobsWith(true);
    cheap.stored.set("0:0", STORED_BEFORE);
    await cheap.run(leaf(0));
    await cheap.run(leaf(1));
    expect(cheap.reads()).toBe(0);
    expect(cheap.calls()).toBe(2);
    // HISTORY's text wins, and is counted as read from there.
    expect(cheap.built.get("0:0")).toBe("stored before");
    expect(cheap.built.get("0:1")).toBe("built 1+1");
    expect(cheap.metrics.get(METRIC.summaries, { kind: "leaf", source: "history" })).toBe(1);
    expect(cheap.metrics.get(METRIC.summaries, { kind: "leaf", source: "model" })).toBe(1);
  });

  it("a model's job reads HISTORY first and makes no call for a node stored there", async () => {
    const model = jobsWith(false);
    model.stored.set("0:0", STORED_BEFORE);
    await model.run(leaf(0));
    expect(model.reads()).toBe(1);
    expect(model.calls()).toBe(0);
    expect(model.built.get("0:0")).toBe("stored before");
  });
});
