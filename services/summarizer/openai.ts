import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { utf8Bytes } from "../../shared/bytes.ts";
import type {
  GroupResult,
  GroupSummarizer,
  SummaryGroup,
  SummaryJob,
  SummaryResult,
  SummaryUsage,
} from "../../shared/jobs.ts";
import { SummarizerError } from "./errors.ts";
import {
  DEFAULT_MAX_INPUT_BYTES,
  SYSTEM_PROMPT,
  contextPrompt,
  groupTask,
  leafTask,
  mergeTask,
  parseGroupReply,
  tooLongPrompt,
} from "./prompts.ts";
import { cleanReply, cutLine } from "./reply.ts";
import { sourceBytes } from "./source.ts";
import { addUsage, noUsage, type UsageEvent, type UsageTotals } from "./usage.ts";
import { DEFAULT_RETRY, type Endpoint, type RetryPolicy, withRetries } from "./transport.ts";

export interface OpenAISummarizerOptions {
  /** The model, as `openai/<model>` names it (without the `openai/`). */
  model: string;
  /** API root of any OpenAI-compatible server; the openai package's default when unset. */
  baseURL?: string | undefined;
  apiKey: string;
  /** Per HTTP call; a call that does not answer in time is retried like a 5xx. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** "Too long" rewrites asked in the same conversation before the shortest reply is cut. */
  shortenTries?: number;
  /** A reply up to line × tolerance bytes is accepted at once when smaller than its source. */
  tolerance?: number;
  maxInputBytes?: number;
  /** Called after every model call (also the calls of a job that then fails), for metrics. */
  onUsage?: (call: UsageEvent) => void;
}

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_SHORTEN_TRIES = 5;
export const DEFAULT_TOLERANCE = 1.25;

/** Summaries from any OpenAI-compatible chat completions endpoint, with our prompts. */
export class OpenAISummarizer implements GroupSummarizer {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly endpoint: Endpoint;
  private readonly retry: RetryPolicy;
  private readonly shortenTries: number;
  private readonly tolerance: number;
  private readonly maxInputBytes: number;
  private readonly onUsage: ((call: UsageEvent) => void) | undefined;
  private readonly totals: UsageTotals = noUsage();

  constructor(options: OpenAISummarizerOptions) {
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // Retries are ours (maxRetries 0): their delays must be configurable and their final error
    // must say which setting to fix.
    this.client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseURL ?? null,
      timeout: timeoutMs,
      maxRetries: 0,
    });
    this.name = `openai/${options.model}`;
    this.endpoint = { model: options.model, baseURL: this.client.baseURL, timeoutMs };
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.shortenTries = options.shortenTries ?? DEFAULT_SHORTEN_TRIES;
    this.tolerance = options.tolerance ?? DEFAULT_TOLERANCE;
    this.maxInputBytes = options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
    this.onUsage = options.onUsage;
  }

  /** Tokens and calls so far, over all jobs: a copy, for metrics. */
  usage(): UsageTotals {
    return { ...this.totals };
  }

  async summarize(job: SummaryJob, signal?: AbortSignal): Promise<SummaryResult> {
    try {
      return await this.converse(job, signal);
    } catch (error) {
      this.totals.failures++;
      throw error;
    }
  }

  /**
   * One call for a group of nodes. A line missing from the reply, empty, or over the limit comes
   * back undefined: the host builds that node alone (with the "too long" rewrites), so a group
   * never costs a node its quality checks.
   */
  async summarizeGroup(group: SummaryGroup, signal?: AbortSignal): Promise<GroupResult> {
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: contextPrompt(group.context) },
      { role: "user", content: groupTask(group, this.maxInputBytes) },
    ];
    const usage: SummaryUsage = { inputTokens: 0, cachedTokens: 0, outputTokens: 0 };
    const name = `${group.jobs[0]?.name ?? "?"}…${group.jobs.at(-1)?.name ?? "?"} (${group.jobs.length} nodes)`;
    let raw: string;
    try {
      raw = await this.call(name, messages, usage, signal);
    } catch (error) {
      this.totals.failures++;
      throw error;
    }
    const lines = parseGroupReply(raw);
    const texts = group.jobs.map((job) => {
      const text = cleanReply(lines.get(job.name) ?? "");
      if (text === "") return undefined;
      const bytes = utf8Bytes(text);
      const tolerated = Math.floor(job.line * this.tolerance);
      return bytes <= job.line || (bytes <= tolerated && bytes < sourceBytes(job))
        ? text
        : undefined;
    });
    return { texts, usage, calls: 1 };
  }

  private async converse(job: SummaryJob, signal?: AbortSignal): Promise<SummaryResult> {
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: SYSTEM_PROMPT },
      { role: "user", content: contextPrompt(job.context) },
      {
        role: "user",
        content:
          job.kind === "leaf"
            ? leafTask(job, this.maxInputBytes)
            : mergeTask(job, this.maxInputBytes),
      },
    ];
    const usage: SummaryUsage = { inputTokens: 0, cachedTokens: 0, outputTokens: 0 };
    const source = sourceBytes(job);
    const tolerated = Math.floor(job.line * this.tolerance);
    let shortest: string | undefined;
    let calls = 0;
    for (let attempt = 0; attempt <= this.shortenTries; attempt++) {
      const raw = await this.call(job.name, messages, usage, signal);
      calls++;
      const text = cleanReply(raw);
      if (text === "") {
        if (shortest !== undefined) break; // a rewrite came back empty: keep the best so far
        throw new SummarizerError(
          "EMPTY_REPLY",
          `model '${this.endpoint.model}' at ${this.endpoint.baseURL} replied with no text for ${job.thread} ${job.name}: the job can be retried; if it keeps happening, choose another model in HISTORY_SUMMARIZER`,
          { terminal: false },
        );
      }
      const bytes = utf8Bytes(text);
      if (bytes <= job.line || (bytes <= tolerated && bytes < source)) {
        return { text, usage, calls };
      }
      if (shortest === undefined || bytes < utf8Bytes(shortest)) shortest = text;
      if (attempt === this.shortenTries) break;
      messages.push(
        { role: "assistant", content: raw },
        { role: "user", content: tooLongPrompt(text, job.line) },
      );
    }
    return { text: cutLine(shortest ?? "", job.line), usage, calls };
  }

  private async call(
    what: string,
    messages: ChatCompletionMessageParam[],
    usage: SummaryUsage,
    signal?: AbortSignal,
  ): Promise<string> {
    const completion = await withRetries(
      () =>
        this.client.chat.completions.create(
          { model: this.endpoint.model, messages },
          signal ? { signal } : {},
        ),
      this.endpoint,
      this.retry,
      signal,
    );
    const call: SummaryUsage = {
      inputTokens: completion.usage?.prompt_tokens ?? 0,
      cachedTokens: completion.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      outputTokens: completion.usage?.completion_tokens ?? 0,
    };
    addUsage(usage, call);
    addUsage(this.totals, call);
    this.totals.calls++;
    this.onUsage?.({ ...call, model: this.endpoint.model, job: what });
    return completion.choices[0]?.message?.content ?? "";
  }
}
