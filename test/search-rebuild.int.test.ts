// `outline replay --all --search` (services/cli/replay/search.ts) against search services played
// here on the run's nats-server: each answers the rebuild request as services/search/api.ts does.
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { rebuildSearchIndexes, searchNotRebuilt } from "../services/cli/replay/search.ts";
import { connectNats } from "../services/nats/connect.ts";
import { REBUILD_ACK_HEADER, rebuildSubject, reply } from "../services/search/api.ts";
import { uniqueNames } from "./support/thread-worker.ts";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "search-rebuild-test" });
});
afterAll(async () => {
  await nc?.close();
});

interface Played {
  instance: string;
  /** How long its rebuild takes after the request. */
  ms: number;
  status?: number;
  /** A service that does not know the header: the report is its only answer. */
  noAck?: boolean;
}

/** Search services answering `<prefix>.search.rebuild`; returns a stop for all of them. */
function play(prefix: string, services: Played[]): () => void {
  const subs = services.map((s) =>
    nc.subscribe(rebuildSubject(prefix), {
      callback: (_err, msg) => {
        if (!s.noAck && msg.headers?.get(REBUILD_ACK_HEADER) === "1")
          reply(msg, 202, { instance: s.instance });
        setTimeout(() => {
          if (s.status !== undefined && s.status !== 200)
            reply(msg, s.status, { instance: s.instance, error: { message: "disk full" } });
          else reply(msg, 200, { instance: s.instance, messages: 3, threads: 1, seconds: 0.1 });
        }, s.ms);
      },
    }),
  );
  return () => subs.forEach((s) => s.unsubscribe());
}

async function rebuild(prefix: string) {
  await nc.flush();
  const lines: string[] = [];
  const result = await rebuildSearchIndexes(nc, prefix, (line) => lines.push(line));
  return { ...result, lines, failure: searchNotRebuilt(result) };
}

describe("outline replay --all --search", () => {
  it("waits for the report of every service that said it rebuilds, however late it comes", async () => {
    const prefix = uniqueNames().apiPrefix;
    // The second reports 5.5 s after the first: the replay used to stop waiting after 5 s.
    const stop = play(prefix, [
      { instance: "fast:1", ms: 50 },
      { instance: "slow:2", ms: 5_550 },
    ]);
    try {
      const { rebuilt, failed, lines, failure } = await rebuild(prefix);
      expect([rebuilt, failed, failure]).toEqual([2, 0, undefined]);
      expect(lines).toContain("search index of slow:2: rebuilding from CHAT…");
      expect(lines.filter((l) => / rebuilt from CHAT, 3 messages/.test(l))).toEqual([
        "search index of fast:1: rebuilt from CHAT, 3 messages of 1 threads in 0.1 s",
        "search index of slow:2: rebuilt from CHAT, 3 messages of 1 threads in 0.1 s",
      ]);
    } finally {
      stop();
    }
  });

  it("counts a failed rebuild and says why; reports a service that does not say it rebuilds", async () => {
    const prefix = uniqueNames().apiPrefix;
    const stop = play(prefix, [
      { instance: "full:1", ms: 20, status: 500 },
      { instance: "older:2", ms: 20, noAck: true },
    ]);
    try {
      const { rebuilt, failed, lines, failure } = await rebuild(prefix);
      expect([rebuilt, failed]).toEqual([1, 1]);
      expect(failure).toBe(
        "the outlines were rebuilt, but 1 of 2 search indexes was not (the lines above say why); fix that, then run 'outline replay --all --search' again",
      );
      expect(lines).toContain("search index of full:1: rebuild failed: disk full");
      expect(lines).toContain(
        "search index of older:2: rebuilt from CHAT, 3 messages of 1 threads in 0.1 s",
      );
    } finally {
      stop();
    }
  });

  it("is a failure that says what to do when no search service runs", async () => {
    const { rebuilt, failed, lines, failure } = await rebuild(uniqueNames().apiPrefix);
    expect([rebuilt, failed, lines]).toEqual([0, 0, []]);
    expect(failure).toBe(
      "the outlines were rebuilt, but no search index was: no search service answered (none runs). Start one (npm start runs one when HISTORY_SEARCH=on), then run 'outline replay --all --search' again",
    );
  });
});
