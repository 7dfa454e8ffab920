// The prompt-builder's search route forwards to a search service over NATS. A stand-in answers
// on the search subject here, as the service would, and counts what it was asked.
import type { Server } from "node:http";
import { headers, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import {
  forwardSearch,
  SEARCH_BEHIND_RETRY_S,
  SEARCH_UNAVAILABLE_RETRY_S,
} from "../services/prompt-builder/search-forward.ts";
import { SEARCH_QUEUE, searchSubject } from "../services/search/api.ts";
import { uniqueNames } from "./support/thread-worker.ts";

const names = uniqueNames();
let nc: NatsConnection;
let server: Server;
let base: string;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "search-forward-test" });
  server = createHttpServer({
    operations: createOperations(createReader(nc, names), { search: true }),
    metrics: createMetrics(nc, {
      workerSubject: `${names.apiPrefix}.metrics.worker`,
      workerTimeoutMs: 100,
    }),
    health: natsHealth(nc),
    token: undefined,
    log: () => {},
    search: forwardSearch(nc, names.apiPrefix, { on: true }),
  });
  base = `http://127.0.0.1:${(await listen(server, "127.0.0.1", 0)).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  await nc.close();
});

/** A search service that answers every request with `status` and `body`, counting them. */
function standIn(status: number, body: unknown): { asked: () => number; sub: Subscription } {
  let asked = 0;
  const sub = nc.subscribe(searchSubject(names.apiPrefix), {
    queue: SEARCH_QUEUE,
    callback: (_err, msg) => {
      asked += 1;
      const h = headers();
      h.set("Outline-Status", String(status));
      msg.respond(JSON.stringify(body), { headers: h });
    },
  });
  return { asked: () => asked, sub };
}

async function search(q = "invoice") {
  const res = await fetch(`${base}/threads/t1/search?q=${q}`);
  const body = (await res.json()) as { error?: { code: string; message: string } };
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body };
}

describe("the prompt-builder's search route, in front of a search service", () => {
  it("passes a 503 of an index catching up on once, saying when to ask again", async () => {
    const message =
      "the search index has read CHAT up to sequence 10 of 900; thread 't1' has messages up to 800: it is catching up (see the search service's log), retry in a few seconds";
    const service = standIn(503, { error: { code: "SEARCH_INDEX_BEHIND", message } });
    await nc.flush();
    try {
      const r = await search();
      expect(r).toEqual({
        status: 503,
        retryAfter: String(SEARCH_BEHIND_RETRY_S),
        body: { error: { code: "SEARCH_INDEX_BEHIND", message } },
      });
      // Asked once: the service already waited for its index, a retry here would only add load.
      await nc.flush();
      expect(service.asked()).toBe(1);
    } finally {
      await service.sub.drain();
    }
  });

  it("says a search service may be building its index when none answers, and when to retry", async () => {
    const r = await search();
    expect([r.status, r.retryAfter, r.body.error?.code]).toEqual([
      503,
      String(SEARCH_UNAVAILABLE_RETRY_S),
      "SEARCH_UNAVAILABLE",
    ]);
    expect(r.body.error?.message).toContain(`no search service answers on ${names.apiPrefix}`);
    expect(r.body.error?.message).toContain("building its index, which takes minutes");
    expect(r.body.error?.message).toContain(`retry in ${SEARCH_UNAVAILABLE_RETRY_S} s`);
  });

  it("gives no Retry-After for an answer, nor for a bad argument the service never sees", async () => {
    const service = standIn(200, { hits: [], before: null });
    await nc.flush();
    try {
      const ok = await search();
      expect([ok.status, ok.retryAfter, ok.body]).toEqual([200, null, { hits: [], before: null }]);
      const bad = await search("%20");
      expect([bad.status, bad.retryAfter, bad.body.error?.code]).toEqual([
        400,
        null,
        "MISSING_QUERY",
      ]);
      await nc.flush();
      expect(service.asked()).toBe(1);
    } finally {
      await service.sub.drain();
    }
  });
});
