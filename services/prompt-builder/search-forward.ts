import { RequestError, TimeoutError, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { searchSubject } from "../search/api.ts";
import { SEARCH_BEHIND_RETRY_S, searchArgs } from "../search/search.ts";
import { ApiError } from "../api/api-error.ts";
import type { RawRequest } from "../api/requests.ts";

/** GET /threads/{thread}/search: the answer of a search service, as its JSON bytes. */
export type SearchForward = (raw: RawRequest) => Promise<Uint8Array>;

export { SEARCH_BEHIND_RETRY_S };
/**
 * No search service answers: none runs, or each is building its index from CHAT, which takes
 * minutes on a large stream (5,000-6,600 messages a second). A retry within a second would not
 * see it come; the caller is told to come back later.
 */
export const SEARCH_UNAVAILABLE_RETRY_S = 30;

const retryAfterOf = (reply: Msg): number | undefined => {
  const value = reply.headers?.get("Retry-After");
  return value && /^\d+$/.test(value) ? Number(value) : undefined;
};

/** No search service answers where the settings say search is off. */
export const searchOffError = (): ApiError =>
  new ApiError(
    501,
    "SEARCH_OFF",
    "search is off (HISTORY_SEARCH=off) and no search service answers: set HISTORY_SEARCH=on and restart (npm start then runs the search service)",
  );

/**
 * The prompt-builder keeps no index (any instance answers for any thread): its search route
 * asks a search service over NATS (`<apiPrefix>.search`, a queue group over every instance's
 * index) and passes the answer on. Arguments are checked here first, so a bad one is a 400
 * whether or not a search service runs.
 */
export function forwardSearch(
  nc: NatsConnection,
  apiPrefix: string,
  options: { on: boolean; timeoutMs?: number },
): SearchForward {
  const subject = searchSubject(apiPrefix);
  return async (raw) => {
    searchArgs(raw);
    let reply: Msg;
    try {
      reply = await nc.request(subject, JSON.stringify(raw), {
        timeout: options.timeoutMs ?? 10_000,
      });
    } catch (err) {
      const noResponders =
        (err instanceof RequestError && err.isNoResponders()) ||
        (err as Error).name === "NoRespondersError";
      if (noResponders && !options.on) throw searchOffError();
      if (noResponders) {
        throw new ApiError(
          503,
          "SEARCH_UNAVAILABLE",
          `no search service answers on ${subject}: it may still be building its index, which takes minutes on a large CHAT (see its log), or it is not running (services/search/main.ts); retry in ${SEARCH_UNAVAILABLE_RETRY_S} s`,
          { retryAfter: SEARCH_UNAVAILABLE_RETRY_S },
        );
      }
      if (err instanceof TimeoutError || (err as Error).name === "TimeoutError") {
        throw new ApiError(
          504,
          "SEARCH_TIMEOUT",
          `the search service did not answer on ${subject} in time; retry`,
        );
      }
      throw err;
    }
    const status = Number(reply.headers?.get("Outline-Status") ?? 200);
    if (status !== 200) {
      const body = reply.json<{ error?: { code?: string; message?: string } }>();
      throw new ApiError(
        status,
        body.error?.code ?? "SEARCH_FAILED",
        body.error?.message ?? `the search service answered ${status}`,
        // The service's own wait when it says one (statusHeaders), else the usual catching up.
        status === 503 ? { retryAfter: retryAfterOf(reply) ?? SEARCH_BEHIND_RETRY_S } : {},
      );
    }
    return reply.data;
  };
}
