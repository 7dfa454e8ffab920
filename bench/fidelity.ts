// Fidelity of the offline summarizer: on generated multi-session conversations (bench/support/
// sessions.ts), the share of planted facts whose key words stand in the outline line that covers
// the message stating them, once the whole conversation is in. Each conversation runs through the
// real core (appendMessage, takeJobs, jobFor, summaryBuilt) at the default settings and with the
// outline sized to 8× smaller than the messages it covers. Three summarizers side by side in the
// same run: a cut (each line the first bytes of what it replaces), the extractive summarizer as
// it was before issue 19 (read from git at BENCH_EXTRACTIVE_BASE), and today's.
import { performance } from "node:perf_hooks";
import { cutToBytes, utf8Bytes } from "../shared/bytes.ts";
import { jobFor } from "../shared/job-view.ts";
import type { Message } from "../shared/events.ts";
import type { Summarizer, SummaryJob } from "../shared/jobs.ts";
import { DEFAULT_SETTINGS, type CoreSettings } from "../shared/settings.ts";
import {
  appendMessage,
  initialThreadState,
  outboxPublished,
  outlineIndexOf,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import { ExtractiveSummarizer } from "../services/summarizer/extractive.ts";
import { renderSource } from "../services/summarizer/source.ts";
import { baselineExtractive } from "./support/baseline.ts";
import { holds, multiSession, type Fact } from "./support/sessions.ts";

const SEEDS = (process.env.BENCH_FIDELITY_SEEDS ?? "1,2,3,4").split(",").map(Number);
const SESSIONS = Number(process.env.BENCH_FIDELITY_SESSIONS ?? 24);
/** Merged lines to print for a reader to judge, before and after (levels 3 to 7). */
const SAMPLES = Number(process.env.BENCH_FIDELITY_SAMPLES ?? 0);
const LINE = DEFAULT_SETTINGS.line;

export interface Strategy {
  name: string;
  /** Made fresh for each conversation (the summarizer keeps what a thread's lines cover). */
  make(): (job: SummaryJob) => Promise<string>;
}

export const cut: Strategy = {
  name: "cut",
  make: () => (job) =>
    Promise.resolve(
      job.kind === "leaf"
        ? cutToBytes(renderSource(job.message), job.line)
        : `${cutToBytes(job.left.text, Math.floor(job.line / 2) - 2)} / ${cutToBytes(job.right.text, Math.floor(job.line / 2) - 2)}`,
    ),
};

/** A summarizer class as a strategy: one instance per conversation, as a worker keeps one. */
export function summarizerStrategy(name: string, Class: new () => Summarizer): Strategy {
  return {
    name,
    make: () => {
      const summarizer = new Class();
      return async (job) => (await summarizer.summarize(job)).text;
    },
  };
}

export const after = summarizerStrategy("after", ExtractiveSummarizer);

/** The extractive summarizer before issue 19 (bench/support/baseline.ts). */
async function before(): Promise<Strategy | undefined> {
  const module = await baselineExtractive();
  if (!module) return undefined;
  return {
    name: "before",
    make: () => (job) =>
      Promise.resolve(
        job.kind === "leaf"
          ? module.extractLeaf(job.message, job.line)
          : module.extractMerge(job.left, job.right, job.line),
      ),
  };
}

interface Outcome {
  passed: number;
  counted: number;
  /** Source bytes the outline covers over the outline's bytes. */
  compression: number;
  /** Text of every merged node built by the summarizer, by `level:index`. */
  merged: Map<string, string>;
  merges: number;
  mergeMs: number;
}

/** A conversation through the core, every job summarized as soon as it is handed out. */
export async function outlineOf(
  messages: readonly Message[],
  settings: CoreSettings,
  summarize: (job: SummaryJob) => Promise<string>,
): Promise<ThreadState> {
  let state = initialThreadState(messages[0]?.thread ?? "", settings);
  for (const [i, message] of messages.entries()) {
    state = appendMessage(state, message, i + 1).state;
    for (;;) {
      const taken = takeJobs(state, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      state = taken.state;
      const at = state;
      for (const job of taken.started.map((ref) => jobFor(at, ref))) {
        state = summaryBuilt(state, job, await summarize(job)).state;
      }
    }
    state = outboxPublished(state, state.outbox.length);
  }
  return state;
}

/** Bytes of the messages [0, boundary) as their leaves' sources. */
export function sourceBytes(messages: readonly Message[], boundary: number): number {
  let bytes = 0;
  for (const m of messages.slice(0, boundary)) bytes += utf8Bytes(renderSource(m));
  return bytes;
}

/** Runs a conversation through the core with one summarizer; checks every covered fact. */
async function runThrough(
  messages: readonly Message[],
  facts: readonly Fact[],
  settings: CoreSettings,
  summarize: (job: SummaryJob) => Promise<string>,
): Promise<Outcome> {
  const merged = new Map<string, string>();
  let merges = 0;
  let mergeMs = 0;
  const state = await outlineOf(messages, settings, async (job) => {
    const t = performance.now();
    const text = await summarize(job);
    if (job.kind === "merge") {
      mergeMs += performance.now() - t;
      merges += 1;
      merged.set(`${job.level}:${job.index}`, text);
    }
    return text;
  });
  let passed = 0;
  let counted = 0;
  for (const fact of facts) {
    if (fact.position >= state.boundary) continue;
    const line = state.outline[outlineIndexOf(state.outline, fact.position)];
    if (!line) continue;
    counted += 1;
    if (holds(line.text, fact.keys)) passed += 1;
  }
  const compression = sourceBytes(messages, state.boundary) / Math.max(1, state.outlineBytes);
  return { passed, counted, compression, merged, merges, mergeMs };
}

/** Bytes of the messages an outline covers at the end (cuts follow the tail only). */
export async function coveredBytes(
  messages: readonly Message[],
  settings: CoreSettings = DEFAULT_SETTINGS,
): Promise<number> {
  const state = await outlineOf(messages, { ...settings, group: 1 }, (job) =>
    Promise.resolve(job.kind === "leaf" ? "x" : "y"),
  );
  return sourceBytes(messages, state.boundary);
}

export function printSamples(
  beforeRun: Pick<Outcome, "merged">,
  afterRun: Pick<Outcome, "merged">,
  count: number,
): void {
  const common = [...afterRun.merged.keys()]
    .filter((key) => beforeRun.merged.has(key))
    .map((key) => key.split(":").map(Number) as [number, number])
    .filter(([level]) => level >= 3 && level <= 7);
  const chosen: [number, number][] = [];
  // Spread over the levels, oldest nodes of each level first.
  for (let round = 0; chosen.length < count && round < 64; round++) {
    for (let level = 3; level <= 7 && chosen.length < count; level++) {
      const at = common.filter(([l]) => l === level).sort((a, b) => a[1] - b[1])[round];
      if (at) chosen.push(at);
    }
  }
  for (const [level, index] of chosen.sort((a, b) => a[0] - b[0] || a[1] - b[1])) {
    const name = `${index << level}+${1 << level}`;
    console.log(`\n  ${name} (level ${level})`);
    console.log(`    before: ${beforeRun.merged.get(`${level}:${index}`)}`);
    console.log(`    after:  ${afterRun.merged.get(`${level}:${index}`)}`);
  }
}

export async function run(): Promise<Record<string, number>> {
  const strategies = [cut, await before(), after].filter((s): s is Strategy => !!s);
  const totals = new Map<string, { passed: number; counted: number; compression: number[] }>();
  let afterMerges = 0;
  let afterMergeMs = 0;
  for (const seed of SEEDS) {
    const { messages, facts } = multiSession(`s${seed}`, seed, SESSIONS);
    const covered = await coveredBytes(messages);
    const eighth = Math.floor(covered / 8);
    const configs: [string, CoreSettings][] = [
      ["default", { ...DEFAULT_SETTINGS }],
      ["x8", { ...DEFAULT_SETTINGS, outline: [eighth, eighth + 2 * LINE] }],
    ];
    const bytes = messages.reduce((n, m) => n + utf8Bytes(m.text), 0);
    console.log(
      `  conversation ${seed}: ${messages.length} messages in ${SESSIONS} sessions, ${(bytes / 1e3).toFixed(0)} KB, ${facts.length} facts; the outline covers ${(covered / 1e3).toFixed(0)} KB at the end`,
    );
    for (const [config, settings] of configs) {
      const runs = new Map<string, Outcome>();
      for (const strategy of strategies) {
        const outcome = await runThrough(messages, facts, settings, strategy.make());
        runs.set(strategy.name, outcome);
        const key = `${config}.${strategy.name}`;
        const total = totals.get(key) ?? { passed: 0, counted: 0, compression: [] };
        total.passed += outcome.passed;
        total.counted += outcome.counted;
        total.compression.push(outcome.compression);
        totals.set(key, total);
        if (strategy.name === "after") {
          afterMerges += outcome.merges;
          afterMergeMs += outcome.mergeMs;
        }
      }
      console.log(
        `    ${config.padEnd(7)} ${strategies
          .map((s) => {
            const o = runs.get(s.name) as Outcome;
            return `${s.name} ${o.passed}/${o.counted} (${(o.passed / Math.max(1, o.counted)).toFixed(3)}, ${o.compression.toFixed(1)}×)`;
          })
          .join("  ")}`,
      );
      const b = runs.get("before");
      const a = runs.get("after");
      if (SAMPLES > 0 && config === "x8" && seed === SEEDS[0] && b && a)
        printSamples(b, a, SAMPLES);
    }
  }
  const figures: Record<string, number> = {};
  for (const [key, total] of totals) {
    const share = total.passed / Math.max(1, total.counted);
    const compression = total.compression.reduce((x, y) => x + y, 0) / total.compression.length;
    figures[`fidelity.${key}`] = Number(share.toFixed(3));
    figures[`fidelity.${key}.compression`] = Number(compression.toFixed(1));
    figures[`fidelity.${key}.facts`] = total.counted;
  }
  for (const config of ["default", "x8"]) {
    const b = figures[`fidelity.${config}.before`];
    const a = figures[`fidelity.${config}.after`];
    if (b !== undefined && a !== undefined && b > 0)
      figures[`fidelity.${config}.after_over_before`] = Number((a / b).toFixed(2));
  }
  figures["fidelity.after.merges_per_sec"] = Math.round(afterMerges / (afterMergeMs / 1000));
  console.log(
    `  share of facts whose key words stand in their line (facts in the outline, ${SEEDS.length} conversations):`,
  );
  for (const config of ["default", "x8"]) {
    console.log(
      `    ${config.padEnd(7)} ${strategies
        .map((s) => {
          const k = `fidelity.${config}.${s.name}`;
          return `${s.name} ${figures[k]} (${figures[`${k}.compression`]}×)`;
        })
        .join(
          "  ",
        )}${figures[`fidelity.${config}.after_over_before`] !== undefined ? `  after/before ${figures[`fidelity.${config}.after_over_before`]}` : ""}`,
    );
  }
  return figures;
}
