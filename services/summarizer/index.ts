import { SettingsError } from "../../shared/errors.ts";
import type { Summarizer } from "../../shared/jobs.ts";
import type { Settings } from "../../shared/settings.ts";
import { ExtractiveSummarizer } from "./extractive.ts";
import { OpenAISummarizer, type OpenAISummarizerOptions } from "./openai.ts";
import { defaultThreads, ExtractPool, threadEntry } from "./pool.ts";
import type { UsageTotals } from "./usage.ts";

export { SummarizerError } from "./errors.ts";
export { ExtractiveSummarizer } from "./extractive.ts";
export { OpenAISummarizer } from "./openai.ts";
export type { UsageEvent, UsageTotals } from "./usage.ts";

/** A summarizer whose spending can be read for metrics. */
export interface MeteredSummarizer extends Summarizer {
  usage(): UsageTotals;
}

type Env = Readonly<Record<string, string | undefined>>;

function baseURLFrom(env: Env): string | undefined {
  const raw = env["OPENAI_BASE_URL"]?.trim();
  if (!raw) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SettingsError(
      "OPENAI_BASE_URL",
      `'${raw}' is not a URL; write the API root, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SettingsError(
      "OPENAI_BASE_URL",
      `'${raw}' is not an http(s) URL; write e.g. https://api.openai.com/v1`,
    );
  }
  return raw;
}

function timeoutFrom(env: Env): number | undefined {
  const raw = env["OPENAI_TIMEOUT_MS"]?.trim();
  if (!raw) return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1_000 || value > 3_600_000) {
    throw new SettingsError(
      "OPENAI_TIMEOUT_MS",
      `'${raw}' is not a timeout; write milliseconds from 1000 to 3600000, e.g. OPENAI_TIMEOUT_MS=60000`,
    );
  }
  return value;
}

/**
 * HISTORY_SUMMARIZER_THREADS: worker threads of the offline summarizer; 0 keeps it on the event
 * loop. Unset: the cores but one, at least 1 and at most 4.
 */
function threadsFrom(env: Env): number {
  const raw = env["HISTORY_SUMMARIZER_THREADS"]?.trim();
  if (!raw) return defaultThreads();
  if (!/^\d+$/.test(raw) || Number(raw) > 64) {
    throw new SettingsError(
      "HISTORY_SUMMARIZER_THREADS",
      `'${raw}' is not a thread count; write 0 (on the event loop) to 64, e.g. HISTORY_SUMMARIZER_THREADS=2`,
    );
  }
  return Number(raw);
}

/** The offline summarizer, on `threads` worker threads (none: on the event loop). */
function extractive(threads: number): ExtractiveSummarizer {
  if (threads === 0) return new ExtractiveSummarizer();
  try {
    return new ExtractiveSummarizer({ pool: new ExtractPool(threads, threadEntry()) });
  } catch (err) {
    throw new SettingsError("HISTORY_SUMMARIZER_THREADS", (err as Error).message);
  }
}

/**
 * The summarizer HISTORY_SUMMARIZER names: `extractive` (offline), or `openai/<model>` at
 * OPENAI_BASE_URL with OPENAI_API_KEY. A setting that cannot work throws a SettingsError at start.
 */
export function createSummarizer(
  settings: Pick<Settings, "summarizer">,
  env: Env,
  overrides: Partial<OpenAISummarizerOptions> = {},
): MeteredSummarizer {
  const chosen = settings.summarizer.trim();
  if (chosen === "extractive") return extractive(threadsFrom(env));
  const model = /^openai\/(\S+)$/.exec(chosen)?.[1];
  if (model === undefined) {
    throw new SettingsError(
      "HISTORY_SUMMARIZER",
      `'${chosen}' is not a summarizer; use 'extractive' (offline) or 'openai/<model>', e.g. openai/gpt-4o-mini`,
    );
  }
  const baseURL = baseURLFrom(env);
  const key = env["OPENAI_API_KEY"]?.trim();
  if (!key && baseURL === undefined) {
    throw new SettingsError(
      "OPENAI_API_KEY",
      `HISTORY_SUMMARIZER=${chosen} needs a key for api.openai.com: set OPENAI_API_KEY, point OPENAI_BASE_URL at another OpenAI-compatible server, or set HISTORY_SUMMARIZER=extractive to summarize offline`,
    );
  }
  const timeoutMs = timeoutFrom(env);
  return new OpenAISummarizer({
    model,
    baseURL,
    // Local servers often need no key, but the client insists on one.
    apiKey: key || "no-key",
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...overrides,
  });
}
