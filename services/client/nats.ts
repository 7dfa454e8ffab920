import type { NatsConnection } from "@nats-io/transport-node";
import { ApiError } from "../api/api-error.ts";
import { retryAfterSeconds, type Transport } from "./transport.ts";

export interface NatsOptions {
  /** An open connection (`@nats-io/transport-node`'s `connect`); the caller closes it. */
  nats: Pick<NatsConnection, "request">;
  /** The prompt-builder's OUTLINE_API_PREFIX (default `outline.api`). */
  apiPrefix?: string;
  /** Per request (default 10 s); then a 504 PROMPT_BUILDER_TIMEOUT. */
  timeoutMs?: number;
}

// Told apart by shape, not class: this module imports nothing from NATS at run time.
const noResponders = (err: unknown) =>
  (err as { isNoResponders?: () => boolean }).isNoResponders?.() === true ||
  (err as Error).name === "NoRespondersError";

/**
 * `<apiPrefix>.<op>` with the arguments as a JSON body (docs/infrastructure.md): the status is
 * the `Outline-Status` header, the wait before a retry its `Retry-After`. Search is answered by a
 * search service on the same prefix.
 */
export function natsTransport(options: NatsOptions): Transport {
  const prefix = options.apiPrefix ?? "outline.api";
  const timeoutMs = options.timeoutMs ?? 10_000;
  const decoder = new TextDecoder();

  return async (op, args) => {
    const subject = `${prefix}.${op}`;
    let reply;
    try {
      reply = await options.nats.request(subject, JSON.stringify(args), { timeout: timeoutMs });
    } catch (err) {
      if (noResponders(err) && op === "search") {
        throw new ApiError(
          503,
          "SEARCH_UNAVAILABLE",
          `no search service answers on ${subject}: search is off (HISTORY_SEARCH=off), or it is still building its index (see its log)`,
        );
      }
      if (noResponders(err)) {
        throw new ApiError(
          503,
          "PROMPT_BUILDER_UNAVAILABLE",
          `no prompt-builder answers on ${subject}: start one ('npm start', or 'node dist/prompt-builder.js') with the same NATS_URL and OUTLINE_API_PREFIX`,
        );
      }
      if ((err as Error).name === "TimeoutError") {
        throw new ApiError(
          504,
          "PROMPT_BUILDER_TIMEOUT",
          `the prompt-builder did not answer on ${subject} within ${timeoutMs / 1000} s; retry, or see its log`,
        );
      }
      throw err;
    }
    const status = Number(reply.headers?.get("Outline-Status") || 200);
    const body = decoder.decode(reply.data);
    const retryAfter = retryAfterSeconds(reply.headers?.get("Retry-After"), Date.now());
    return retryAfter === undefined ? { status, body } : { status, body, retryAfter };
  };
}
