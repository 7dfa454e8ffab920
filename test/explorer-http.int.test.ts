import type { Server } from "node:http";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { createExplorer, type Explorer } from "../services/explorer/explorer.ts";
import { MAX_STREAMS } from "../services/explorer/live.ts";
import type { TailPage, ThreadBody } from "../services/explorer/types.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import { SMALL_SETTINGS } from "./support/prompt-builder-api.ts";
import {
  chatMessage,
  harness,
  publishMessage,
  uniqueNames,
  type Harness,
} from "./support/thread-worker.ts";

// The explorer's HTTP face in-process, without a browser: the page and its files, the JSON under
// /ui/api/, errors, the token and its session cookie, and the live stream. No worker runs: the
// threads have no snapshot, so the explorer shows them as the API does (all tail).

const TOKEN = "explorer-http-token-0123456789abcdef";

interface Running {
  base: string;
  server: Server;
  explorer: Explorer;
}

let nc: NatsConnection;
let names: InfraNames;
let h: Harness;
const running: Running[] = [];

async function start(token: string | undefined, search = false): Promise<Running> {
  const reader = createReader(nc, names);
  const operations = createOperations(reader);
  const explorer = createExplorer({
    nc,
    names,
    reader,
    operations,
    settings: SMALL_SETTINGS,
    token,
    search: search ? (raw) => Promise.resolve({ hits: [], q: raw.q }) : undefined,
  });
  const server = createHttpServer({
    operations,
    metrics: createMetrics(nc, { workerSubject: `${names.apiPrefix}.metrics.worker` }),
    health: natsHealth(nc),
    token,
    explorer,
  });
  const base = `http://127.0.0.1:${(await listen(server, "127.0.0.1", 0)).port}`;
  const r = { base, server, explorer };
  running.push(r);
  return r;
}

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "explorer-http" });
  names = uniqueNames();
  await ensureTopology(nc, names);
  h = await harness(nc, names);
  for (let i = 0; i < 8; i++) await publishMessage(h, chatMessage("http-a", i));
});

afterAll(async () => {
  for (const r of running) {
    r.explorer.close();
    const closed = new Promise((resolve) => r.server.close(resolve));
    r.server.closeIdleConnections();
    await closed;
  }
  await nc?.close();
});

describe("the explorer over HTTP", () => {
  it("serves the page for the list and any thread, and its files built from the sources", async () => {
    const { base } = await start(undefined);
    for (const path of ["/ui/", "/ui/threads/http-a", "/ui/threads/no-such-thread"]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
      const html = await res.text();
      const js = /src="(\/ui\/assets\/app\.js\?v=[0-9a-f]+)"/.exec(html)?.[1];
      expect(js).toBeDefined();
      const asset = await fetch(`${base}${js}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("cache-control")).toContain("immutable");
      expect(asset.headers.get("content-type")).toContain("text/javascript");
      expect((await asset.text()).length).toBeGreaterThan(10_000);
    }
    const css = await fetch(`${base}/ui/assets/app.css`);
    expect(css.headers.get("cache-control")).toBe("no-cache");
    const redirect = await fetch(`${base}/ui`, { redirect: "manual" });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get("location")).toBe("/ui/");
    // The server's own address leads to the list; any other unknown path is the API's JSON 404.
    for (const method of ["GET", "HEAD"]) {
      const root = await fetch(`${base}/`, { method, redirect: "manual" });
      expect([method, root.status, root.headers.get("location")]).toEqual([method, 302, "/ui/"]);
    }
    const nothing = await fetch(`${base}/nothing`);
    expect(nothing.status).toBe(404);
    const { error } = (await nothing.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("NO_SUCH_ROUTE");
    // This server serves the explorer, so its 404 names it.
    expect(error.message).toContain("the explorer at /ui/");
  });

  it("answers a thread's page, tail, prompt and zoom; errors as the API does", async () => {
    const { base } = await start(undefined, true);
    const body = (await (await fetch(`${base}/ui/api/threads/http-a`)).json()) as ThreadBody;
    expect(body.snapshot.count).toBe(8);
    expect(body.tail.count).toBe(8);
    expect(body.settings.tail).toEqual(SMALL_SETTINGS.tail);
    const tail = (await (
      await fetch(`${base}/ui/api/threads/http-a/tail?offset=2&limit=3`)
    ).json()) as TailPage;
    expect(tail.messages.map((m) => m.position)).toEqual([2, 3, 4]);
    expect(tail.messages[0]?.id).toBe("http-a-m2");
    // Past the end: no page quietly taken from elsewhere, but an empty one with the count.
    const past = await fetch(`${base}/ui/api/threads/http-a/tail?offset=999`);
    expect(past.status).toBe(200);
    expect(await past.json()).toMatchObject({ count: 8, offset: 999, messages: [] });
    const atEnd = (await (
      await fetch(`${base}/ui/api/threads/http-a/tail?offset=8`)
    ).json()) as TailPage;
    expect([atEnd.count, atEnd.offset, atEnd.messages]).toEqual([8, 8, []]);
    // A negative offset is refused as zoom refuses one, with the same code and words.
    const negative = await fetch(`${base}/ui/api/threads/http-a/tail?offset=-1`);
    expect(await negative.json()).toEqual({
      error: { code: "BAD_PAGE", message: "offset must be a whole number ≥ 0, got -1" },
    });
    const zoom = (await (await fetch(`${base}/ui/api/threads/http-a/zoom?id=1&n=1`)).json()) as {
      message: { id: string };
    };
    expect(zoom.message.id).toBe("http-a-m1");
    const prompt = await fetch(`${base}/ui/api/threads/http-a/prompt?format=anthropic`);
    expect(prompt.status).toBe(200);
    const search = (await (await fetch(`${base}/ui/api/threads/http-a/search?q=x`)).json()) as {
      q: string;
    };
    expect(search.q).toBe("x");
    const config = (await (await fetch(`${base}/ui/api/config`)).json()) as { search: boolean };
    expect(config.search).toBe(true);

    const cases: [string, number, string][] = [
      ["/ui/api/threads/nobody-here", 404, "THREAD_NOT_FOUND"],
      ["/ui/api/threads/bad%20id", 400, "BAD_THREAD_ID"],
      ["/ui/api/threads/%E0%A4%A", 400, "BAD_THREAD_ID"],
      ["/ui/api/threads/http-a/zoom?id=3&n=3", 400, "N_NOT_POWER_OF_TWO"],
      ["/ui/api/threads/http-a/tail?offset=-1", 400, "BAD_PAGE"],
      ["/ui/api/threads/http-a/tail?offset=x", 400, "NOT_A_NUMBER"],
      ["/ui/api/threads/http-a/tail?limit=0", 400, "BAD_LIMIT"],
      ["/ui/api/threads/http-a/tail?limit=501", 400, "BAD_LIMIT"],
      ["/ui/api/threads/http-a/nothing", 404, "NO_SUCH_ROUTE"],
      ["/ui/api/threads?before=x", 400, "NOT_A_NUMBER"],
      ["/ui/api/threads?limit=0", 400, "BAD_LIMIT"],
      ["/ui/api/threads?limit=-3", 400, "BAD_LIMIT"],
      ["/ui/api/threads?limit=201", 400, "BAD_LIMIT"],
      ["/ui/api/threads?limit=2.5", 400, "NOT_A_NUMBER"],
      [`/ui/api/threads?filter=${"x".repeat(129)}`, 400, "BAD_FILTER"],
      ["/ui/elsewhere", 404, "NO_SUCH_ROUTE"],
      ["/ui/assets/nothing.js", 404, "NO_SUCH_ASSET"],
    ];
    for (const [path, status, code] of cases) {
      const res = await fetch(`${base}${path}`);
      const json = (await res.json()) as { error: { code: string; message: string } };
      expect([path, res.status, json.error.code]).toEqual([path, status, code]);
      expect(json.error.message.length).toBeGreaterThan(10);
    }
    // A page of threads is 1 to 200 long: anything else is said, never quietly taken as 1 or 200.
    const limits = await Promise.all(
      ["0", "201", "2.5"].map(async (limit) => {
        const res = await fetch(`${base}/ui/api/threads?limit=${limit}`);
        return ((await res.json()) as { error: { message: string } }).error.message;
      }),
    );
    expect(limits).toEqual([
      "limit is from 1 to 200 threads, got 0",
      "limit is from 1 to 200 threads, got 201",
      "limit must be a whole number from 1 to 200 threads, got '2.5'",
    ]);
    for (const limit of ["1", "200"]) {
      expect((await fetch(`${base}/ui/api/threads?limit=${limit}`)).status).toBe(200);
    }
    // The list's cursor is checked as search's is: each bad value gets the rule it broke.
    const befores = await Promise.all(
      ["-1", "x", "1.5"].map(async (before) => {
        const res = await fetch(`${base}/ui/api/threads?before=${before}`);
        const { error } = (await res.json()) as { error: { code: string; message: string } };
        return [res.status, error.code, error.message];
      }),
    );
    expect(befores).toEqual([
      [400, "BAD_BEFORE", "before is the last page's next (a bucket sequence), 0 or more; got -1"],
      [400, "NOT_A_NUMBER", "before must be a whole number ≥ 0, got 'x'"],
      [400, "NOT_A_NUMBER", "before must be a whole number ≥ 0, got '1.5'"],
    ]);
    // Empty is no cursor; one past every sequence (16 digits) starts from the newest too.
    for (const before of ["", "0", "1000000000000000"]) {
      expect((await fetch(`${base}/ui/api/threads?before=${before}`)).status).toBe(200);
    }
    // Search is offered only when the prompt-builder serves it.
    const without = await start(undefined);
    expect((await fetch(`${without.base}/ui/api/threads/http-a/search?q=x`)).status).toBe(404);
  });

  it("keeps its data behind the token; the page's session cookie opens /ui/api/ only", async () => {
    const { base } = await start(TOKEN);
    // The page and its files hold no thread data: served to anyone, so it can ask for the token;
    // so is the way to it from the server's address.
    expect((await fetch(`${base}/ui/`)).status).toBe(200);
    const root = await fetch(`${base}/`, { redirect: "manual" });
    expect([root.status, root.headers.get("location")]).toEqual([302, "/ui/"]);
    expect(await root.text()).toBe("");
    expect((await fetch(`${base}/ui/api/threads`)).status).toBe(401);
    expect((await fetch(`${base}/ui/api/session`)).status).toBe(401);
    const bad = await fetch(`${base}/ui/api/session`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(bad.status).toBe(401);
    const bearer = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${base}/ui/api/threads`, { headers: bearer })).status).toBe(200);
    const session = await fetch(`${base}/ui/api/session`, { headers: bearer });
    expect(session.status).toBe(204);
    const cookie = session.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^outline_ui=[A-Za-z0-9_-]+; Path=\/ui; HttpOnly; SameSite=Strict/);
    expect(cookie).not.toContain(TOKEN);
    const pair = cookie.split(";")[0] ?? "";
    expect((await fetch(`${base}/ui/api/threads`, { headers: { cookie: pair } })).status).toBe(200);
    const forged = `${pair.slice(0, -2)}xx`;
    expect((await fetch(`${base}/ui/api/threads`, { headers: { cookie: forged } })).status).toBe(
      401,
    );
    expect(
      (await fetch(`${base}/threads/http-a/outline`, { headers: { cookie: pair } })).status,
    ).toBe(401);
  });

  it("streams a snapshot event when the thread's snapshot is written", async () => {
    const { base } = await start(undefined);
    const res = await fetch(`${base}/ui/api/threads/http-a/events`);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body?.getReader();
    if (!reader) throw new Error("no body");
    const decoder = new TextDecoder();
    let text = "";
    const read = async (until: string) => {
      const deadline = Date.now() + 10_000;
      while (!text.includes(until) && Date.now() < deadline) {
        const chunk = (await reader.read()) as { value?: Uint8Array; done: boolean };
        if (chunk.done) break;
        text += decoder.decode(chunk.value);
      }
    };
    await read("retry:");
    // The watch starts just after the stream opens: written until the page hears of it.
    let writing = true;
    const writes = (async () => {
      while (writing) {
        await h.snapshots.put("http-a", JSON.stringify({ thread: "http-a" }));
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    await read("event: snapshot");
    writing = false;
    await writes;
    expect(text).toMatch(
      /event: snapshot\ndata: \{"type":"snapshot","revision":\d+,"deleted":false\}/,
    );
    await reader.cancel();
    await h.snapshots.delete("http-a");
  });

  it("answers 404 for the live stream of an unknown thread, taking no live slot", async () => {
    const { base } = await start(undefined);
    // More than the live slots: each is refused at once, and a known thread still gets its stream.
    for (let i = 0; i <= MAX_STREAMS; i++) {
      const res = await fetch(`${base}/ui/api/threads/nobody-${i}/events`);
      if (res.status !== 404) await res.body?.cancel();
      expect(res.status).toBe(404);
      const json = (await res.json()) as { error: { code: string } };
      expect([res.status, json.error.code]).toEqual([404, "THREAD_NOT_FOUND"]);
    }
    const known = await fetch(`${base}/ui/api/threads/http-a/events`);
    expect(known.status).toBe(200);
    expect(known.headers.get("content-type")).toContain("text/event-stream");
    await known.body?.cancel();
  });

  it("ends its live streams on close, so the server can stop", async () => {
    const r = await start(undefined);
    const res = await fetch(`${r.base}/ui/api/threads/http-a/events`);
    // As the prompt-builder stops: the explorer first, then the server.
    r.explorer.close();
    const closed = new Promise((resolve) => r.server.close(resolve));
    r.server.closeIdleConnections();
    await expect(res.text()).resolves.toContain("retry:");
    await closed;
    running.splice(running.indexOf(r), 1);
  });
});
