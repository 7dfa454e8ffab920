// Cost and cache on a realistic conversation (20,000 messages by default): model calls per message,
// summarizer input/output bytes per message, the share of each turn's prompt that is byte-identical
// to the previous turn's prefix (what a provider cache reads), and prompt size over time. Ours side
// by side with baselines written here: a sliding window and a rolling summary, each dropping on
// every turn past its budget and, fairer to caches, in batched cuts as ours does.
import { mkdirSync } from "node:fs";
import { performance } from "node:perf_hooks";
import type { Message } from "../shared/events.ts";
import { groupJobs } from "../shared/groups.ts";
import type { SummaryGroup, SummaryJob } from "../shared/jobs.ts";
import { nodeId, nodeSize } from "../shared/names.ts";
import { buildOpenAIPrompt, wholeMessage, type OpenAIMessage } from "../shared/prompt.ts";
import { jobFor } from "../shared/job-view.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import {
  appendMessage,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
} from "../shared/thread.ts";
import { estimateMessageTokens } from "../shared/tokens.ts";
import { extractLeaf, extractMerge } from "../services/summarizer/extractive.ts";
import {
  SYSTEM_PROMPT,
  contextPrompt,
  groupTask,
  leafTask,
  mergeTask,
} from "../services/summarizer/prompts.ts";
import { renderChart } from "./chart.ts";
import { generateConversation } from "./conversation.ts";

const N = Number(process.env.BENCH_COST_MESSAGES ?? 20_000);
const AGENT = "north";
const settings = {
  line: 512,
  tail: DEFAULT_SETTINGS.tail,
  outline: DEFAULT_SETTINGS.outline,
  concurrency: 8,
  group: DEFAULT_SETTINGS.group ?? 1,
};
const ROLLING_SUMMARY_BYTES = 8_192;

const bytes = (s: string): number => Buffer.byteLength(s, "utf8");

/** Length of the common prefix: native comparisons of 4 KB chunks, then characters. */
function commonPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  const CHUNK = 4096;
  let i = 0;
  while (i + CHUNK <= max && a.substr(i, CHUNK) === b.substr(i, CHUNK)) i += CHUNK;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * A provider's prompt cache, roughly: a call reads from the cache the longest prefix it shares
 * with any of the last few calls (calls run concurrently and cache entries live for minutes).
 */
class PrefixCache {
  private recent: string[] = [];
  constructor(private readonly size = 16) {}
  /** Bytes of `input` not served by the cache. */
  uncached(input: string): number {
    let best = 0;
    for (const r of this.recent) best = Math.max(best, commonPrefix(r, input));
    this.recent.push(input);
    if (this.recent.length > this.size) this.recent.shift();
    return bytes(input.slice(best));
  }
}

/** What a provider receives for a prompt, serialised in order. */
const wire = (messages: readonly OpenAIMessage[]): string => JSON.stringify(messages);

interface Strategy {
  name: string;
  calls: number;
  inputBytes: number;
  uncachedInputBytes: number;
  outputBytes: number;
  /** Bytes the nodes are made from (a leaf's message, a merge's two lines): no instructions, no context. */
  sourceBytes: number;
  /** Bytes of the agent's prompts a provider cache could not read (what changed from the previous turn). */
  uncachedPromptBytes: number;
  reuse: number[];
  sizes: number[];
  previous: string;
}

const strategy = (name: string): Strategy => ({
  name,
  calls: 0,
  inputBytes: 0,
  uncachedInputBytes: 0,
  outputBytes: 0,
  sourceBytes: 0,
  uncachedPromptBytes: 0,
  reuse: [],
  sizes: [],
  previous: "",
});

function turn(s: Strategy, messages: readonly OpenAIMessage[]): void {
  const current = wire(messages);
  const shared = s.previous === "" ? 0 : commonPrefix(s.previous, current);
  s.reuse.push(current.length === 0 ? 1 : shared / current.length);
  s.uncachedPromptBytes += bytes(current.slice(shared));
  s.sizes.push(bytes(current));
  s.previous = current;
}

/** What a node is made from (a leaf's message, a merge's two lines): no instructions, no view. */
function sourceOf(job: SummaryJob): number {
  return job.kind === "leaf"
    ? bytes(job.message.text) + (job.message.steps ? bytes(JSON.stringify(job.message.steps)) : 0)
    : bytes(job.left.text) + bytes(job.right.text);
}

/**
 * Ours as the worker runs it: jobs handed out as the core allows (whole groups of
 * `group` nodes unless a cut or a batch waits), split into calls as the worker splits them, each
 * call's input as the OpenAI summarizer would send it; texts from the extractive summarizer.
 * Without `prompts`, the agent's prompts are not built (their figures are left out).
 */
function ours(log: readonly Message[], group: number, prompts = true): Strategy {
  const s = strategy(group > 1 ? "outline (ours)" : "outline, one node a call");
  const cache = new PrefixCache();
  let nodes = 0;
  const call = (g: SummaryGroup): void => {
    const only = g.jobs.length === 1 ? g.jobs[0] : undefined;
    const task = only ? (only.kind === "leaf" ? leafTask(only) : mergeTask(only)) : groupTask(g);
    const input = [SYSTEM_PROMPT, contextPrompt(g.context), task].join("\n");
    s.calls += 1;
    s.inputBytes += bytes(input);
    s.uncachedInputBytes += cache.uncached(input);
  };
  let state = initialThreadState("cost", { ...settings, group });
  for (const [i, message] of log.entries()) {
    state = appendMessage(state, message, i + 1).state;
    for (;;) {
      const taken = takeJobs(state, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      state = taken.state;
      const at = state;
      const jobs = taken.started.map((ref) => jobFor(at, ref));
      for (const g of groupJobs(jobs, group)) call(g);
      for (const job of jobs) {
        nodes += 1;
        s.sourceBytes += sourceOf(job);
        const text =
          job.kind === "leaf"
            ? extractLeaf(job.message, job.line)
            : extractMerge(job.left, job.right, job.line);
        s.outputBytes += bytes(text);
        state = summaryBuilt(state, job, text).state;
      }
    }
    state = outboxPublished(state, state.outbox.length);
    if (!prompts) continue;
    const prompt = buildOpenAIPrompt({
      agent: AGENT,
      lines: state.outline.map((l) => ({
        id: nodeId(l),
        n: nodeSize(l),
        text: l.text,
        until: l.until,
      })),
      cutAt: state.cutAt,
      tail: state.tail.map((t) => t.message),
    });
    turn(s, prompt.messages);
  }
  const free = state.stats.freeLeaves + state.stats.freeMerges;
  console.log(
    `  ${s.name}: group ${group}, ${state.stats.cuts} cuts, ${state.stats.merges} merges, ${free} free nodes, ${nodes} paid nodes in ${s.calls} calls (${(nodes / Math.max(1, s.calls)).toFixed(1)} a call), outline ${state.outline.length} lines`,
  );
  return s;
}

/**
 * Keeps the newest messages that fit the same total budget as ours (tail[1] + outline[1]/4
 * tokens). `overflow` drops the oldest on every turn past the budget (the prefix moves each
 * turn); `cut` lets the window grow to the budget, then drops as many tokens as our cut does
 * (tail[1] - tail[0]) at once, so the prefix stays the same between cuts, as ours does.
 */
function slidingWindow(log: readonly Message[], mode: "overflow" | "cut"): Strategy {
  const s = strategy(mode === "overflow" ? "sliding window" : "sliding window, batched cuts");
  const budget = settings.tail[1] + settings.outline[1] / 4;
  const keepTo = mode === "overflow" ? budget : budget - (settings.tail[1] - settings.tail[0]);
  const window: { message: Message; cost: number }[] = [];
  let tokens = 0;
  for (const message of log) {
    const cost = estimateMessageTokens(message);
    window.push({ message, cost });
    tokens += cost;
    if (tokens > budget) {
      while (tokens > keepTo && window.length > 1) tokens -= window.shift()?.cost ?? 0;
    }
    turn(
      s,
      window.map((w) => wholeMessage(w.message, AGENT, null)),
    );
  }
  return s;
}

/**
 * One running summary rewritten from itself plus the leaving messages. `overflow` prunes on every
 * turn that passes the budget, as LangChain's ConversationSummaryBufferMemory does (`prune()`
 * after each `save_context`: pop the oldest until under `max_token_limit`, then
 * `predict_new_summary(pruned, summary)`); `cut` waits for the same cut as ours (tail past
 * tail[1], back to tail[0]), which no common library does but which is the cheapest a rolling
 * summary can be.
 */
function rollingSummary(log: readonly Message[], mode: "overflow" | "cut"): Strategy {
  const s = strategy(mode === "overflow" ? "rolling summary" : "rolling summary, batched cuts");
  const [low, high] = settings.tail;
  const keepTo = mode === "overflow" ? high : low;
  const header = `${SYSTEM_PROMPT}\nRewrite the running summary with the new messages, in at most ${ROLLING_SUMMARY_BYTES} bytes.\n<summary>\n`;
  const tail: { message: Message; cost: number }[] = [];
  let tokens = 0;
  let summary = "";
  let cutAt: string | null = null;
  for (const message of log) {
    const cost = estimateMessageTokens(message);
    tail.push({ message, cost });
    tokens += cost;
    if (tokens > high) {
      const leaving: Message[] = [];
      while (tokens > keepTo && tail.length > 1) {
        const out = tail.shift();
        if (!out) break;
        tokens -= out.cost;
        leaving.push(out.message);
      }
      const rendered = leaving
        .map((m) => `${m.from}: ${m.text}${m.steps ? ` ${JSON.stringify(m.steps)}` : ""}`)
        .join("\n");
      const input = `${header}${summary}\n</summary>\n<messages>\n${rendered}\n</messages>`;
      s.calls += 1;
      s.inputBytes += bytes(input);
      s.sourceBytes += bytes(rendered) + bytes(summary);
      // A model rewrites the summary every call, so a cache reads the fixed header at most.
      s.uncachedInputBytes += bytes(input) - (s.calls > 1 ? bytes(header) : 0);
      summary = extractLeaf(
        {
          ...message,
          from: "summary",
          to: undefined,
          text: `${summary}\n${rendered}`,
          steps: undefined,
        },
        ROLLING_SUMMARY_BYTES,
      );
      s.outputBytes += bytes(summary);
      cutAt = message.at;
    }
    const head: OpenAIMessage[] = summary
      ? [{ role: "user", content: `Summary of the earlier conversation:\n${summary}` }]
      : [];
    turn(s, [...head, ...tail.map((t) => wholeMessage(t.message, AGENT, cutAt))]);
  }
  return s;
}

const mean = (xs: readonly number[]): number =>
  xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

export async function run(): Promise<Record<string, number>> {
  await Promise.resolve();
  const { messages } = generateConversation("cost", N);
  const logBytes = messages.reduce(
    (n, m) => n + bytes(m.text) + (m.steps ? bytes(JSON.stringify(m.steps)) : 0),
    0,
  );
  console.log(`  conversation: ${N} messages, ${(logBytes / 1e6).toFixed(1)} MB`);
  const figures: Record<string, number> = {};
  const all: Strategy[] = [];
  const strategies: [string, (log: readonly Message[]) => Strategy][] = [
    ["outline", (log) => ours(log, settings.group)],
    // The agent's prompts do not depend on the grouping: only the summarizer's figures are kept.
    ["outline_single", (log) => ours(log, 1, false)],
    ["sliding", (log) => slidingWindow(log, "overflow")],
    ["sliding_batched", (log) => slidingWindow(log, "cut")],
    ["rolling", (log) => rollingSummary(log, "overflow")],
    ["rolling_batched", (log) => rollingSummary(log, "cut")],
  ];
  for (const [key, make] of strategies) {
    const started = performance.now();
    const s = make(messages);
    all.push(s);
    figures[`${key}.model_calls_per_message`] = Number((s.calls / N).toFixed(4));
    figures[`${key}.summarizer_input_bytes_per_message`] = Math.round(s.inputBytes / N);
    figures[`${key}.summarizer_uncached_input_bytes_per_message`] = Math.round(
      s.uncachedInputBytes / N,
    );
    figures[`${key}.summarizer_output_bytes_per_message`] = Math.round(s.outputBytes / N);
    figures[`${key}.summarizer_source_bytes_per_message`] = Math.round(s.sourceBytes / N);
    if (s.sizes.length > 0) {
      figures[`${key}.uncached_prompt_bytes_per_turn`] = Math.round(s.uncachedPromptBytes / N);
      figures[`${key}.uncached_bytes_per_turn`] = Math.round(
        (s.uncachedPromptBytes + s.uncachedInputBytes) / N,
      );
      figures[`${key}.prefix_reuse_pct`] = Number((mean(s.reuse) * 100).toFixed(2));
      figures[`${key}.prompt_kb_mean`] = Number((mean(s.sizes) / 1024).toFixed(1));
      figures[`${key}.prompt_kb_max`] = Number((Math.max(...s.sizes) / 1024).toFixed(1));
    }
    const agent =
      s.sizes.length > 0
        ? `  reuse ${(mean(s.reuse) * 100).toFixed(2)}% (uncached ${Math.round(s.uncachedPromptBytes / N)} B/turn)  prompt mean ${(mean(s.sizes) / 1024).toFixed(0)} KB max ${(Math.max(...s.sizes) / 1024).toFixed(0)} KB`
        : "  (agent prompts as ours)";
    console.log(
      `  ${s.name.padEnd(16)} calls/msg ${(s.calls / N).toFixed(3)}  input B/msg ${Math.round(s.inputBytes / N)} (uncached ${Math.round(s.uncachedInputBytes / N)}, sources ${Math.round(s.sourceBytes / N)})  output B/msg ${Math.round(s.outputBytes / N)}${agent}  (${((performance.now() - started) / 1000).toFixed(1)} s)`,
    );
  }
  mkdirSync(new URL("../docs/", import.meta.url), { recursive: true });
  const rolling = (xs: number[], w = 200) =>
    xs.map((_, i) => mean(xs.slice(Math.max(0, i - w + 1), i + 1)) * 100);
  const colors = ["#1f77b4", "#d62728", "#2ca02c", "#98df8a", "#9467bd", "#c5b0d5"];
  // One node a call sends the agent the same prompts as ours: only the summarizer figures differ.
  const charted = all.filter((s) => s.sizes.length > 0);
  renderChart(new URL("../docs/cost-and-cache.png", import.meta.url).pathname, [
    {
      title: "Prompt size per turn (KB)",
      unit: "",
      series: charted.map((s, k) => ({
        name: s.name,
        color: colors[k] ?? "#000",
        values: s.sizes.map((b) => b / 1024),
      })),
    },
    {
      title: "Prompt bytes read from the provider's cache, % (mean of the last 200 turns)",
      unit: "%",
      max: 100,
      series: charted.map((s, k) => ({
        name: s.name,
        color: colors[k] ?? "#000",
        values: rolling(s.reuse),
      })),
    },
  ]);
  console.log("  chart: docs/cost-and-cache.png");
  return figures;
}
