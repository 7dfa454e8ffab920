import { hostname } from "node:os";
import { type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { ApiError, errorBody } from "../api/api-error.ts";
import { parseBody, statusHeaders } from "../api/nats-wire.ts";
import type { SearchIndexer } from "./indexer.ts";
import type { Search } from "./search.ts";

/** Search services share requests through one queue group: any instance answers any thread. */
export const SEARCH_QUEUE = "outline-search";

/** `<apiPrefix>.search`: the search operation, as the prompt-builder's operations are served. */
export const searchSubject = (apiPrefix: string): string => `${apiPrefix}.search`;
/** `<apiPrefix>.search.rebuild`: every instance (no queue group) rebuilds its index from CHAT. */
export const rebuildSubject = (apiPrefix: string): string => `${apiPrefix}.search.rebuild`;
/**
 * A rebuild request with this header set to "1" is first answered at once, status 202 and
 * `{ instance }`, then with the report when done: the asker learns whom to wait for. Without
 * it (`nats req`), the report is the only answer.
 */
export const REBUILD_ACK_HEADER = "Outline-Ack";

export interface SearchApi {
  drain(): Promise<void>;
}

/** Answers with `body` as JSON, its HTTP status and any Retry-After in headers (statusHeaders). */
export function reply(msg: Msg, status: number, body: unknown, retryAfter?: number): void {
  if (!msg.reply) return;
  msg.respond(JSON.stringify(body), statusHeaders(status, retryAfter));
}

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError
    ? err
    : new ApiError(
        500,
        "INTERNAL",
        `the search service failed: ${(err as Error).message}; see its log`,
      );
}

/**
 * Serves search over NATS request/reply (the body holds the HTTP query's arguments plus
 * `thread`; the reply is the same JSON, an error `{ error }` with its HTTP status in the
 * `Outline-Status` header). It joins the queue group only once the index has caught up with
 * CHAT, so a fresh instance building its index leaves the requests to the others.
 */
export function serveSearchApi(
  nc: NatsConnection,
  apiPrefix: string,
  search: Search,
  indexer: SearchIndexer,
  log: (line: string) => void,
): SearchApi {
  const subs: Subscription[] = [];
  const inflight = new Set<Promise<void>>();
  const instance = `${hostname()}:${process.pid}`;
  let closed = false;

  const track = (work: Promise<void>) => {
    const done = work.finally(() => inflight.delete(done));
    inflight.add(done);
  };

  async function answer(msg: Msg): Promise<void> {
    try {
      reply(msg, 200, await search(parseBody(msg)));
    } catch (err) {
      const apiError = asApiError(err);
      if (apiError.status === 500) log(`search: failed: ${(err as Error).stack ?? String(err)}`);
      reply(msg, apiError.status, errorBody(apiError), apiError.retryAfter);
    }
  }

  async function rebuild(msg: Msg): Promise<void> {
    log("search: rebuilding the index from CHAT (asked over NATS)");
    if (msg.headers?.get(REBUILD_ACK_HEADER) === "1") reply(msg, 202, { instance });
    try {
      const report = await indexer.rebuild();
      log(
        `search: rebuilt: ${report.messages} messages of ${report.threads} threads in ${report.seconds} s`,
      );
      reply(msg, 200, { instance, ...report });
    } catch (err) {
      const apiError = asApiError(err);
      log(`search: rebuild failed: ${apiError.message}`);
      reply(msg, apiError.status, { instance, ...errorBody(apiError) });
    }
  }

  subs.push(
    nc.subscribe(rebuildSubject(apiPrefix), {
      callback: (err, msg) => {
        if (!err) track(rebuild(msg));
      },
    }),
  );
  void indexer.ready.then(() => {
    if (closed) return;
    log(`search: index caught up with CHAT; answering ${searchSubject(apiPrefix)}`);
    subs.push(
      nc.subscribe(searchSubject(apiPrefix), {
        queue: SEARCH_QUEUE,
        callback: (err, msg) => {
          if (err) log(`search: subscription failed: ${err.message}`);
          else track(answer(msg));
        },
      }),
    );
  });

  return {
    async drain() {
      closed = true;
      await Promise.all(subs.map((s) => s.drain()));
      await Promise.allSettled([...inflight]);
    },
  };
}
