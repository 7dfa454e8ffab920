/**
 * The typed client of the prompt-builder's API (SPEC §8), exported as `outline/client`: the same
 * operations over HTTP (`/threads/{thread}/…`, `/cluster`) or NATS request/reply
 * (`<apiPrefix>.<op>`), their answers typed, their failures an ApiError with the API's `code` and
 * `status`. Imports nothing at run time: a NATS connection is passed in by the caller.
 */
import { ApiError } from "../api/api-error.ts";
import { sleep } from "../util/wait.ts";
import { httpTransport, type HttpOptions } from "./http.ts";
import { natsTransport, type NatsOptions } from "./nats.ts";
import type { Answer, Transport } from "./transport.ts";
import type {
  ClusterAnswer,
  OutlineSnapshot,
  PromptReply,
  SearchReply,
  ToolDefinition,
  ZoomReply,
} from "../../shared/api.ts";

export { ApiError };
export type { Answer, Transport, HttpOptions, NatsOptions };
export type * from "../../shared/api.ts";

/** A whole number; a numeric string is taken too, as the API's query string carries it. */
export type Whole = number | string;

export interface PromptRequest {
  thread: string;
  /** Whose messages are `assistant`; the others' are `user`, prefixed with their author. */
  agent?: string;
  /** ISO-8601 time: lines and messages older than it are left out. */
  from?: string;
  format?: "openai" | "anthropic";
}

export interface ZoomRequest {
  thread: string;
  id: Whole;
  n: Whole;
  /** n=1 only: where the message's page starts, in UTF-16 code units. */
  offset?: Whole;
  limit?: Whole;
}

export interface SearchRequest {
  thread: string;
  q: string;
  /** The previous answer's `before`, for the next page. */
  before?: Whole;
  limit?: Whole;
}

export interface ThreadRequest {
  thread: string;
}

/** The prompt-builder's operations (and search, answered by a search service behind it). */
export interface OutlineClient {
  prompt(request: PromptRequest): Promise<PromptReply>;
  zoom(request: ZoomRequest): Promise<ZoomReply>;
  search(request: SearchRequest): Promise<SearchReply>;
  outline(request: ThreadRequest): Promise<OutlineSnapshot>;
  tools(request: ThreadRequest): Promise<ToolDefinition[]>;
  cluster(): Promise<ClusterAnswer>;
}

export interface RetryOptions {
  /** How many times a 503 with Retry-After is asked again (default 3). */
  retries?: number;
  /** Most time spent waiting across those retries (default 30 s): a longer wait is not made. */
  maxWaitMs?: number;
  /** How to wait (tests pass their own clock). */
  sleep?: (ms: number) => Promise<void>;
}

export type ClientOptions =
  (HttpOptions & RetryOptions & { nats?: never }) | (NatsOptions & RetryOptions & { url?: never });

/** The error an answer other than 200 carries: `{ error: { code, message } }`. */
export function answerError(op: string, answer: Answer): ApiError {
  let body: { error?: { code?: unknown; message?: unknown } } | undefined;
  try {
    body = JSON.parse(answer.body) as typeof body;
  } catch {
    // Not the API's error body (a proxy's page): the status alone is said.
  }
  const code = body?.error?.code;
  const message = body?.error?.message;
  return new ApiError(
    answer.status,
    typeof code === "string" ? code : `HTTP_${answer.status}`,
    typeof message === "string"
      ? message
      : `${op} was answered ${answer.status} without the API's error body: ${answer.body.slice(0, 200)}`,
    answer.retryAfter === undefined ? {} : { retryAfter: answer.retryAfter },
  );
}

/**
 * A client over any transport. A 503 that says when to ask again (Retry-After) is asked again
 * then, at most `retries` times and `maxWaitMs` in all; past that it is thrown as it came.
 */
export function clientOver(transport: Transport, options: RetryOptions = {}): OutlineClient {
  const retries = options.retries ?? 3;
  const maxWaitMs = options.maxWaitMs ?? 30_000;
  const wait = options.sleep ?? ((ms: number) => sleep(ms));

  async function call<T>(op: Parameters<Transport>[0], args: object): Promise<T> {
    let waited = 0;
    for (let attempt = 0; ; attempt++) {
      const answer = await transport(op, args as Record<string, unknown>);
      if (answer.status === 200) {
        try {
          return JSON.parse(answer.body) as T;
        } catch (err) {
          throw new ApiError(
            502,
            "BAD_ANSWER",
            `${op} was answered 200 with a body that is not JSON (${(err as Error).message})`,
          );
        }
      }
      const err = answerError(op, answer);
      const waitMs = err.retryAfter === undefined ? undefined : err.retryAfter * 1000;
      if (
        err.status !== 503 ||
        waitMs === undefined ||
        attempt >= retries ||
        waited + waitMs > maxWaitMs
      )
        throw err;
      await wait(waitMs);
      waited += waitMs;
    }
  }

  return {
    prompt: (request) => call("prompt", request),
    zoom: (request) => call("zoom", request),
    search: (request) => call("search", request),
    outline: (request) => call("outline", request),
    tools: (request) => call("tools", request),
    cluster: () => call("cluster", {}),
  };
}

/**
 * `createClient({ url, token })`: HTTP, `url` the prompt-builder's base (`http://127.0.0.1:8080`),
 * `token` its OUTLINE_API_TOKEN when it requires one. `createClient({ nats })`: request/reply on
 * an open NATS connection, `apiPrefix` its OUTLINE_API_PREFIX (default `outline.api`).
 */
export function createClient(options: ClientOptions): OutlineClient {
  const transport = options.nats !== undefined ? natsTransport(options) : httpTransport(options);
  return clientOver(transport, options);
}
