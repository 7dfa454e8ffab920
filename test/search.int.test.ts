/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment,
   @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call --
   replies are JSON read as the wire gives them; expect() checks their shape, which is the point. */
// Search over the original messages (SPEC §8, issue 18): a real worker, the prompt-builder's HTTP
// API forwarding to the search service, and the search service's indexer, all on the run's
// nats-server with names of their own.
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import { forwardSearch } from "../services/prompt-builder/search-forward.ts";
import { SEARCH_TOOL, ZOOM_TOOL } from "../services/api/tools.ts";
import { rebuildSubject, searchSubject } from "../services/search/api.ts";
import type { SearchIndexer } from "../services/search/indexer.ts";
import type { SearchReply } from "../services/search/search.ts";
import { parseSearchConfig } from "../services/search/config.ts";
import { startSearchService, type SearchService } from "../services/search/service.ts";
import type { ThreadWorker } from "../services/thread-worker/worker.ts";
import { SEARCH_HEADER_LINE } from "../shared/prompt.ts";
import {
  harness,
  publishMessage,
  publishRaw,
  readSnapshot,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { startSmallWorker } from "./support/worker-scope.ts";

const T = "facts";
const COUNT = 240;
/** Planted facts: position → text. */
const FACTS: Record<number, string> = {
  17: "Ana: the Locker Code is 4711, keep it to yourself",
  120: "invoice number INV-2026-0042 was paid on Friday",
  150: "明天的会议室在三楼，记得带电脑",
  180: "🎉 launch party on Tuesday 🎉🎉",
  200: "Straße and ÉTÉ are spelled with care",
  235: "the tail holds the last fact: gate B-12",
};
/** Every third message mentions the rollout: the paging set. */
const pagedAt = (i: number) => i % 3 === 1 && !(i in FACTS);

function message(thread: string, i: number, extra: Partial<Message> = {}): Message {
  const base =
    FACTS[i] ?? (pagedAt(i) ? `rollout step ${i} done` : `filler ${i} about nothing much`);
  return {
    id: `${thread}-m${i}`,
    thread,
    at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    from: i % 2 === 0 ? "Ana" : "north",
    role: i % 2 === 0 ? "user" : "assistant",
    text: base,
    ...extra,
  };
}

let nc: NatsConnection;
let h: Harness;
let worker: ThreadWorker;
let server: Server;
let base: string;
let dir: string;
let indexPath: string;
let service: SearchService;
let indexer: SearchIndexer;

async function startSearch(): Promise<void> {
  service = await startSearchService({
    nc,
    names: h.names,
    path: indexPath,
    log: () => {},
    idleCheckMs: 200,
  });
  indexer = service.indexer;
  await indexer.ready;
}

const stopSearch = () => service.stop();

async function get(path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: await res.json() };
}

const search = async (q: string, more = ""): Promise<SearchReply> => {
  const r = await get(`/threads/${T}/search?q=${encodeURIComponent(q)}${more}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as SearchReply;
};

async function request(body: unknown): Promise<{ status: number; body: any }> {
  const reply = await nc.request(searchSubject(h.names.apiPrefix), JSON.stringify(body), {
    timeout: 5_000,
  });
  return { status: Number(reply.headers?.get("Outline-Status")), body: reply.json<any>() };
}

let snapshot: OutlineSnapshot;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "search-test" });
  const names = uniqueNames();
  await ensureTopology(nc, names);
  h = await harness(nc, names);
  worker = await startSmallWorker(h);
  for (let i = 0; i < COUNT; i++) await publishMessage(h, message(T, i));
  await waitSettled(h, [T]);
  snapshot = (await readSnapshot(h, T)) as OutlineSnapshot;
  dir = mkdtempSync(join(tmpdir(), "outline-search-"));
  indexPath = join(dir, "index", "search.db");
  await startSearch();
  const reader = createReader(nc, names);
  server = createHttpServer({
    operations: createOperations(reader, { search: true }),
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
}, 120_000);

afterAll(async () => {
  if (server) await new Promise((r) => server.close(r));
  await stopSearch().catch(() => {});
  await worker.stop();
  await nc.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("search", () => {
  it("finds planted facts with their position, message id, line and a marked snippet", async () => {
    expect(snapshot.boundary).toBeGreaterThan(200);
    expect(snapshot.boundary).toBeLessThan(235);
    const locker = await search("locker cod");
    expect(locker.hits).toHaveLength(1);
    const [hit] = locker.hits;
    const line = snapshot.lines.find((l) => l.id <= 17 && 17 < l.id + l.n);
    expect(hit).toMatchObject({
      id: 17,
      message: `${T}-m17`,
      in: `${line?.id}+${line?.n}`,
      from: "north",
      at: message(T, 17).at,
    });
    expect(hit?.snippet).toBe("Ana: the «Locker Cod»e is 4711, keep it to yourself");
    expect(locker.before).toBeNull();

    const invoice = await search("INV-2026-0042");
    expect(invoice.hits.map((x) => x.id)).toEqual([120]);
    // In the tail: no line holds it.
    const tail = await search("gate b-12");
    expect(tail.hits).toMatchObject([{ id: 235, in: null, message: `${T}-m235` }]);

    // The position is what zoom takes: zoom(id, 1) reads that very message.
    for (const found of [hit, invoice.hits[0], tail.hits[0]]) {
      const zoom = await get(`/threads/${T}/zoom?id=${found?.id}&n=1`);
      expect(zoom.body.message.id).toBe(found?.message);
    }
  });

  it("pages back newest first with before, every hit once", async () => {
    const expected = Array.from({ length: COUNT }, (_, i) => i)
      .filter(pagedAt)
      .reverse();
    const seen: number[] = [];
    let before: number | null | undefined;
    for (let page = 0; page < 100; page++) {
      const reply = await search("ROLLOUT step", `&limit=7${before ? `&before=${before}` : ""}`);
      expect(reply.hits.length).toBeLessThanOrEqual(7);
      seen.push(...reply.hits.map((x) => x.id));
      before = reply.before;
      if (before === null) break;
      expect(before).toBe(reply.hits.at(-1)?.id);
    }
    expect(before).toBeNull();
    expect(seen).toEqual(expected);
    // 20 by default.
    expect((await search("rollout")).hits).toHaveLength(20);
  });

  it("matches CJK and emoji as a reader expects, and ignores case beyond ASCII", async () => {
    expect((await search("会议室")).hits.map((x) => x.id)).toEqual([150]);
    // One and two characters of CJK or emoji come from the gram index.
    expect((await search("会议")).hits.map((x) => x.id)).toEqual([150]);
    expect((await search("楼")).hits.map((x) => x.id)).toEqual([150]);
    expect((await search("三楼，")).hits.map((x) => x.id)).toEqual([150]);
    expect((await search("🎉")).hits.map((x) => x.id)).toEqual([180]);
    expect((await search("🎉🎉")).hits.map((x) => x.id)).toEqual([180]);
    expect((await search("🎉🎉🎉")).hits).toEqual([]);
    expect((await search("party on tuesday 🎉")).hits.map((x) => x.id)).toEqual([180]);
    expect((await search("été")).hits.map((x) => x.id)).toEqual([200]);
    expect((await search("STRASSE")).hits).toEqual([]);
    expect((await search("straße")).hits.map((x) => x.id)).toEqual([200]);
    // Decomposed é (e + U+0301) matches the composed é the message holds.
    expect((await search("e\u0301te\u0301")).hits.map((x) => x.id)).toEqual([200]);
    // A short Latin query is a scan of the newest messages; it still finds them.
    expect((await search("B-")).hits.map((x) => x.id)).toEqual([235]);
    const snippet = (await search("会议")).hits[0]?.snippet;
    expect(snippet).toBe("明天的«会议»室在三楼，记得带电脑");
  });

  it("answers 400 without q or with bad arguments, and 404 for an unknown thread", async () => {
    for (const [query, code] of [
      ["", "MISSING_QUERY"],
      ["?q=", "MISSING_QUERY"],
      ["?q=%20%20", "MISSING_QUERY"],
      ["?q=x&before=-1", "BAD_BEFORE"],
      ["?q=x&limit=0", "BAD_LIMIT"],
      ["?q=x&limit=101", "BAD_LIMIT"],
      ["?q=x&before=abc", "NOT_A_NUMBER"],
      [`?q=${"x".repeat(1001)}`, "QUERY_TOO_LONG"],
    ] as const) {
      const r = await get(`/threads/${T}/search${query}`);
      expect({ query, status: r.status, code: r.body.error?.code }).toEqual({
        query,
        status: 400,
        code,
      });
      expect(r.body.error.message.length).toBeGreaterThan(10);
    }
    const unknown = await get(`/threads/nobody-here/search?q=x`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("THREAD_NOT_FOUND");
    // The same over NATS request/reply.
    expect(await request({ thread: T })).toMatchObject({
      status: 400,
      body: { error: { code: "MISSING_QUERY" } },
    });
    expect(await request({ thread: "nobody-here", q: "x" })).toMatchObject({ status: 404 });
    const viaNats = await request({ thread: T, q: "locker cod" });
    expect(viaNats).toEqual({ status: 200, body: await search("locker cod") });
  });

  it("lists search beside zoom in /tools and names it in the outline header", async () => {
    const tools = await get(`/threads/${T}/tools`);
    expect(tools.body).toEqual([ZOOM_TOOL, SEARCH_TOOL]);
    const prompt = await get(`/threads/${T}/prompt?agent=north`);
    expect(prompt.body.messages[0].content).toContain(SEARCH_HEADER_LINE);
  });

  it("skips logged zoom and search results but counts their positions", async () => {
    const thread = "echoes";
    const zoomEcho = JSON.stringify({
      message: { id: "x", position: 0, text: "the secret word is pumpernickel" },
      page: { offset: 0 },
    });
    const searchEcho = JSON.stringify({
      hits: [{ id: 0, snippet: "«pumpernickel»" }],
      before: null,
    });
    const sent: Message[] = [
      { ...message(thread, 0), text: "the secret word is pumpernickel" },
      { ...message(thread, 1), role: "tool", text: zoomEcho },
      { ...message(thread, 2), role: "tool", text: searchEcho },
      { ...message(thread, 3), role: "tool", text: "0+1|Ana: the secret word is pumpernickel" },
      {
        ...message(thread, 4),
        steps: [
          { tool: "zoom", output: "pumpernickel" },
          { tool: "grep", output: "pumpernickel in notes.txt" },
        ],
      },
      { ...message(thread, 5), role: "tool", text: "grep found pumpernickel twice" },
    ];
    for (const m of sent) await publishMessage(h, m);
    await waitSettled(h, [thread]);
    const r = await get(`/threads/${thread}/search?q=pumpernickel`);
    expect(r.body.hits.map((x: { id: number }) => x.id)).toEqual([5, 4, 0]);
  });

  it("keeps nothing of a deleted thread, even one erased while the index was not running", async () => {
    for (const thread of ["gone-live", "gone-offline"]) {
      for (let i = 0; i < 20; i++) await publishMessage(h, message(thread, i));
    }
    await waitSettled(h, ["gone-live", "gone-offline"]);
    await waitFor("both indexed", () => indexer.store().count("gone-offline") === 20);
    const deleted = (thread: string) =>
      publishRaw(
        h,
        h.s.threadDeleted(thread),
        new TextEncoder().encode(JSON.stringify({ thread, at: "2026-02-01T00:00:00Z" })),
      );

    await deleted("gone-live");
    await waitFor(
      "the live deletion to reach the index",
      () => indexer.store().rowsOf("gone-live") === 0,
    );
    await waitFor("the worker's erase", async () => (await readSnapshot(h, "gone-live")) === null);
    expect((await get(`/threads/gone-live/search?q=filler`)).status).toBe(404);

    // The index is down while the worker erases the thread, thread.deleted included.
    await stopSearch();
    await deleted("gone-offline");
    await waitFor(
      "the worker's erase",
      async () => (await readSnapshot(h, "gone-offline")) === null,
    );
    await startSearch();
    await waitFor(
      "the restarted index to erase it",
      () => indexer.store().rowsOf("gone-offline") === 0,
      10_000,
    );
    expect(indexer.store().rowsOf("gone-offline")).toBe(0);
    expect((await search("locker cod")).hits.map((x) => x.id)).toEqual([17]);
  });

  it("survives a restart, and a replay rebuilds the index (a lost file, or on request)", async () => {
    const before = await search("rollout", "&limit=50");
    await stopSearch();
    const applied = statSync(indexPath).size;
    expect(applied).toBeGreaterThan(0);
    await startSearch();
    expect(await search("rollout", "&limit=50")).toEqual(before);

    // The file is lost: the restarted service reads CHAT from its start.
    await stopSearch();
    rmSync(indexPath);
    rmSync(`${indexPath}-wal`, { force: true });
    await startSearch();
    expect(await search("rollout", "&limit=50")).toEqual(before);
    expect((await search("locker cod")).hits.map((x) => x.id)).toEqual([17]);

    // Asked over NATS: every running index rebuilds into a new file and answers from it.
    const reply = await nc.request(rebuildSubject(h.names.apiPrefix), "", { timeout: 30_000 });
    const report = reply.json<{ messages: number; threads: number }>();
    expect(report.messages).toBeGreaterThanOrEqual(COUNT);
    expect(existsSync(`${indexPath}.rebuild`)).toBe(false);
    expect(await search("rollout", "&limit=50")).toEqual(before);
    // Messages after the rebuild are indexed as before.
    await publishMessage(h, { ...message(T, COUNT), text: "one more rollout after the rebuild" });
    expect((await search("after the rebuild")).hits.map((x) => x.id)).toEqual([COUNT]);
  });

  it("a second instance in the same folder keeps a file named after its port", async () => {
    // As two `npm start`s in one folder (the second with NATS_URL and PORT): neither names a file.
    const cwd = join(dir, "folder");
    const open = async (port: number, lines: string[]) => {
      const config = parseSearchConfig({}, cwd, port);
      const conn = await connectNats({ url: inject("natsUrl"), name: `search-test-${port}` });
      const started = await startSearchService({
        nc: conn,
        names: h.names,
        path: config.path,
        ...(config.fallback === undefined ? {} : { fallback: config.fallback }),
        log: (line) => lines.push(line),
        idleCheckMs: 200,
      });
      await started.indexer.ready;
      return { started, conn };
    };
    const firstLines: string[] = [];
    const secondLines: string[] = [];
    const first = await open(18090, firstLines);
    let second = await open(18091, secondLines);
    try {
      expect(first.started.indexer.path).toBe(join(cwd, ".data", "search.db"));
      expect(second.started.indexer.path).toBe(join(cwd, ".data", "search-18091.db"));
      expect(secondLines.join("\n")).toContain(
        `${join(cwd, ".data", "search.db")} is held by another search service; this one keeps ${join(cwd, ".data", "search-18091.db")}`,
      );
      expect(firstLines.join("\n")).not.toContain("held by another");
      // Each index is whole: both hold the thread's every message.
      const applied = second.started.indexer.progress().applied;
      expect(applied).toBe(first.started.indexer.progress().applied);
      expect(applied).toBeGreaterThanOrEqual(COUNT);
      // Restarted while the first runs, the second takes its own file again and reads on from it.
      await second.started.stop();
      await second.conn.close();
      second = await open(18091, []);
      expect(second.started.indexer.path).toBe(join(cwd, ".data", "search-18091.db"));
      expect(second.started.indexer.progress().applied).toBe(applied);
    } finally {
      for (const { started, conn } of [first, second]) {
        await started.stop().catch(() => {});
        await conn.close();
      }
    }
  });

  it("answers from any instance's index, each kept up on its own", async () => {
    // A second instance: its own file, built from CHAT, in the same queue group.
    const otherNc = await connectNats({ url: inject("natsUrl"), name: "search-test-other" });
    const other = await startSearchService({
      nc: otherNc,
      names: h.names,
      path: join(dir, "other", "search.db"),
      log: () => {},
      idleCheckMs: 200,
    });
    try {
      await other.indexer.ready;
      const before = await search("rollout", "&limit=50");
      // Either may answer each request: the answers are the same.
      for (let i = 0; i < 6; i++) expect(await search("rollout", "&limit=50")).toEqual(before);

      // The first goes away: the other answers, and indexes what comes meanwhile.
      await stopSearch();
      expect(await search("rollout", "&limit=50")).toEqual(before);
      await publishMessage(h, {
        ...message(T, COUNT + 1),
        text: "a fact while one index was down",
      });
      expect((await search("while one index")).hits.map((x) => x.id)).toEqual([COUNT + 1]);

      // The first comes back, reads on from its file, and answers alone once the other goes.
      await startSearch();
      await other.stop();
      expect((await search("while one index")).hits.map((x) => x.id)).toEqual([COUNT + 1]);
      expect((await search("rollout", "&limit=50")).hits).toEqual(before.hits);
    } finally {
      await other.stop().catch(() => {});
      await otherNc.close();
    }
  });
});
