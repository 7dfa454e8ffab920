import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { backoffMs, sleep } from "../util/wait.ts";
import { SummarizerError } from "./errors.ts";

export interface RetryPolicy {
  /** Retries after the first attempt, for 408, 409, 429, 5xx, timeouts and lost connections. */
  retries: number;
  /** Backoff before retry r (0-based) is min(maxDelayMs, baseDelayMs·2^r) without a Retry-After. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A server asking for a longer wait than this gets this; a stuck job is worse than a 429. */
  maxRetryAfterMs: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export const DEFAULT_RETRY: RetryPolicy = {
  retries: 4,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
  sleep,
};

/** Where the calls go, for messages that say what to fix. */
export interface Endpoint {
  model: string;
  baseURL: string;
  timeoutMs: number;
}

/** The wait a server asked for: `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as a date. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number(headers.get("retry-after-ms") ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = headers.get("retry-after");
  if (raw === null || raw.trim() === "") return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const isRetryableStatus = (status: number): boolean =>
  status === 408 || status === 409 || status === 429 || status >= 500;

/** Turns whatever the client threw into a SummarizerError that says what to fix. */
export function classify(error: unknown, at: Endpoint, attempts: number): SummarizerError {
  if (error instanceof SummarizerError) return error;
  const tries = `${attempts} attempt${attempts === 1 ? "" : "s"}`;
  if (error instanceof APIUserAbortError) {
    return new SummarizerError("ABORTED", "the summary was cancelled by its caller", {
      terminal: false,
      cause: error,
    });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new SummarizerError(
      "TIMEOUT",
      `no answer from ${at.baseURL} for model '${at.model}' within ${at.timeoutMs} ms (${tries}): check the server at OPENAI_BASE_URL is up and not overloaded, or raise OPENAI_TIMEOUT_MS for a slow model; the job can be retried`,
      { terminal: false, cause: error },
    );
  }
  if (error instanceof APIConnectionError) {
    const why = error.cause instanceof Error ? error.cause.message : error.message;
    return new SummarizerError(
      "CONNECTION",
      `cannot reach ${at.baseURL} (${why}) after ${tries}: check OPENAI_BASE_URL and that the server is running; the job can be retried`,
      { terminal: false, cause: error },
    );
  }
  if (error instanceof APIError && typeof error.status === "number") {
    const status = error.status;
    const said = `${status}${error.message ? `: ${error.message}` : ""}`;
    const opts = { status, cause: error };
    if (status === 401) {
      return new SummarizerError(
        "AUTH",
        `${at.baseURL} rejected the API key (${said}): set OPENAI_API_KEY to a valid key for this endpoint, or set HISTORY_SUMMARIZER=extractive to summarize offline`,
        { ...opts, terminal: true },
      );
    }
    if (status === 403) {
      return new SummarizerError(
        "FORBIDDEN",
        `${at.baseURL} denied access to model '${at.model}' (${said}): give the key in OPENAI_API_KEY access to that model, or name another one in HISTORY_SUMMARIZER=openai/<model>`,
        { ...opts, terminal: true },
      );
    }
    if (status === 404) {
      return new SummarizerError(
        "NOT_FOUND",
        `${at.baseURL} has no model '${at.model}' or no chat completions route (${said}): check that HISTORY_SUMMARIZER=openai/<model> names a model it serves and that OPENAI_BASE_URL is the API root (e.g. https://api.openai.com/v1)`,
        { ...opts, terminal: true },
      );
    }
    if (status === 429) {
      return new SummarizerError(
        "RATE_LIMITED",
        `${at.baseURL} kept rate-limiting model '${at.model}' (${said}) after ${tries}: lower HISTORY_CONCURRENCY or raise the account's limits; the job can be retried`,
        { ...opts, terminal: false },
      );
    }
    if (isRetryableStatus(status)) {
      return new SummarizerError(
        "SERVER",
        `${at.baseURL} failed (${said}) after ${tries}: the endpoint is having trouble; the job can be retried (check OPENAI_BASE_URL if it persists)`,
        { ...opts, terminal: false },
      );
    }
    return new SummarizerError(
      "BAD_REQUEST",
      `${at.baseURL} rejected the request for model '${at.model}' (${said}): check that HISTORY_SUMMARIZER=openai/<model> names a chat completions model served at OPENAI_BASE_URL`,
      { ...opts, terminal: true },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SummarizerError(
    "CONNECTION",
    `calling ${at.baseURL} failed (${message}): check OPENAI_BASE_URL and OPENAI_API_KEY`,
    { terminal: false, cause: error },
  );
}

function shouldRetry(error: unknown): boolean {
  if (error instanceof APIUserAbortError) return false;
  if (error instanceof APIConnectionError) return true;
  return error instanceof APIError && typeof error.status === "number"
    ? isRetryableStatus(error.status)
    : false;
}

/** Runs one model call, retrying transient failures with backoff that honours Retry-After. */
export async function withRetries<T>(
  call: () => Promise<T>,
  at: Endpoint,
  policy: RetryPolicy,
  signal?: AbortSignal,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (signal?.aborted || attempt >= policy.retries || !shouldRetry(error)) {
        throw classify(signal?.aborted ? new APIUserAbortError() : error, at, attempt + 1);
      }
      const asked =
        error instanceof APIError ? retryAfterMs((error as APIError).headers) : undefined;
      const delay =
        asked !== undefined
          ? Math.min(asked, policy.maxRetryAfterMs)
          : backoffMs(attempt, policy.baseDelayMs, policy.maxDelayMs, 0);
      try {
        await policy.sleep(delay, signal);
      } catch {
        throw classify(new APIUserAbortError(), at, attempt + 1);
      }
    }
  }
}
