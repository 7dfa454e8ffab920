import { ApiError } from "../api/api-error.ts";
import { retryAfterSeconds, type Transport } from "./transport.ts";

export interface HttpOptions {
  /** The prompt-builder's base URL, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  url: string;
  /** Sent as `Authorization: Bearer <token>`: the prompt-builder's OUTLINE_API_TOKEN. */
  token?: string | undefined;
  /** Per request (default 10 s); then a 504 PROMPT_BUILDER_TIMEOUT. */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

/** `GET /threads/{thread}/<op>?…` (or `/cluster`), the arguments in the query string. */
export function httpTransport(options: HttpOptions): Transport {
  const base = new URL(options.url.endsWith("/") ? options.url : `${options.url}/`);
  const fetch = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const headers: Record<string, string> = { accept: "application/json" };
  if (options.token) headers.authorization = `Bearer ${options.token}`;

  return async (op, args) => {
    const path =
      op === "cluster"
        ? "cluster"
        : `threads/${encodeURIComponent(typeof args.thread === "string" ? args.thread : "")}/${op}`;
    const url = new URL(path, base);
    for (const [key, value] of Object.entries(args)) {
      if (key === "thread" || value === undefined || value === null) continue;
      url.searchParams.set(key, typeof value === "string" ? value : JSON.stringify(value));
    }
    let res: Response;
    try {
      res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      const name = (err as Error).name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new ApiError(
          504,
          "PROMPT_BUILDER_TIMEOUT",
          `the prompt-builder at ${base.origin} did not answer ${op} within ${timeoutMs / 1000} s; retry, or see its log`,
        );
      }
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(
        503,
        "PROMPT_BUILDER_UNAVAILABLE",
        `no prompt-builder answers at ${base.origin} (${cause?.code ?? cause?.message ?? (err as Error).message}): start one ('npm start') or check the URL`,
      );
    }
    const body = await res.text();
    const retryAfter = retryAfterSeconds(res.headers.get("retry-after"), Date.now());
    return retryAfter === undefined
      ? { status: res.status, body }
      : { status: res.status, body, retryAfter };
  };
}
