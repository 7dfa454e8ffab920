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
import { quietLogger } from "../services/thread-worker/log.ts";
import { RetryLog } from "../services/thread-worker/retry-log.ts";
import { SummarizerError } from "../services/summarizer/errors.ts";
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

function jobsWith(
  cheap: boolean,
  failing:
    | { times: (job: LeafJob) => number; retries: RetryLog; terminal?: boolean }
    | undefined = undefined,
) {
  const { history, stored, reads } = fakeHistory();
  const metrics = workerMetrics();
  let calls = 0;
  const triesOf = new Map<string, number>();
  const summarizer: MeteredSummarizer = {
    name: "fake",
    cheap,
    summarize: (job) => {
      calls += 1;
      const tries = (triesOf.get(job.name) ?? 0) + 1;
      triesOf.set(job.name, tries);
      if (failing && tries <= failing.times(job as LeafJob))
        return Promise.reject(
          failing.terminal
            ? new SummarizerError("AUTH", "401 Incorrect API key provided", {
                terminal: true,
                status: 401,
              })
            : new SummarizerError("SERVER", "503 from the model", { terminal: false, status: 503 }),
        );
      return Promise.resolve({ text: `built ${job.name}` });
    },
    usage: noUsage,
  };
  const built = new Map<string, string>();
  const refused: NodeRef[] = [];
  const jobs = new SummaryJobs({
    summarizer,
    limiter: new Limiter(1),
    history,
    metrics,
    log: quietLogger,
    retries: failing?.retries ?? new RetryLog(quietLogger),
    timing: failing ? { ...DEFAULT_JOB_TIMING, retryBaseMs: 1, retryCapMs: 2 } : DEFAULT_JOB_TIMING,
    refusals: new Refusals(DEFAULT_JOB_TIMING, failing?.retries),
    built: (ref: NodeRef, text: string) => built.set(`${ref.level}:${ref.index}`, text),
    failed: (ref: NodeRef) => refused.push(ref),
  });
  const run = async (...all: LeafJob[]) => {
    for (const job of all) jobs.start({ job, until: job.message.at });
    while (jobs.active > 0) await new Promise((r) => setImmediate(r));
  };
  return { run, stored, reads, built, refused, metrics, calls: () => calls };
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

describe("summary jobs through a model outage", () => {
  it("every node is retried until built; the outage is one warning and one recovery", async () => {
    const lines: string[] = [];
    const log = {
      ...quietLogger,
      warn: (m: string) => lines.push(`warn ${m}`),
      info: (m: string) => lines.push(`info ${m}`),
    };
    const retries = new RetryLog(log);
    const outage = jobsWith(false, { times: (job) => 1 + (job.index % 3), retries });
    const jobs = Array.from({ length: 20 }, (_, i) => leaf(i));
    await outage.run(...jobs);
    for (const job of jobs) expect(outage.built.get(`0:${job.index}`)).toBe(`built ${job.name}`);
    expect(outage.calls()).toBe(20 + jobs.reduce((n, j) => n + 1 + (j.index % 3), 0));
    expect(outage.metrics.get(METRIC.summaryRetries)).toBe(outage.calls() - 20);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^warn summarize \d+\+1 of thread 't' failed \(attempt 1\), retrying in \d+ ms/,
    );
    expect(lines[1]).toMatch(
      /^info recovered: 20 that failed this way succeeded, after 4 attempts at most/,
    );
    expect(retries.failing).toBe(0);
  });

  it("a key refused for every node: each goes back to the actor, told once at error level", async () => {
    const lines: string[] = [];
    const log = {
      ...quietLogger,
      error: (m: string, f?: Record<string, unknown>) =>
        lines.push(`error ${m} ${JSON.stringify(f)}`),
    };
    const retries = new RetryLog(log);
    const refused = jobsWith(false, { times: () => 1, retries, terminal: true });
    const jobs = Array.from({ length: 20 }, (_, i) => leaf(i));
    await refused.run(...jobs);
    expect(refused.refused.map((r) => r.index).sort((a, b) => a - b)).toEqual(
      jobs.map((j) => j.index),
    );
    expect(refused.built.size).toBe(0);
    expect(refused.metrics.get(METRIC.summaryFailures)).toBe(20);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^error summarize \d+\+1 of thread 't' failed \(attempt 1\), retrying in \d+ ms.*401 Incorrect API key.*the summarizer refused it \(AUTH\): fix the cause, e.g. HISTORY_SUMMARIZER or OPENAI_API_KEY/,
    );
    expect(retries.failing).toBe(1);
  });
});
