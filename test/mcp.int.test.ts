// The MCP server (SPEC §8 "MCP", issue 49) through the SDK's own client over both transports:
// Streamable HTTP on the prompt-builder's HTTP server (behind its token), and stdio through the
// real `outline mcp <thread>` asking a prompt-builder over NATS. A real worker builds the outline
// and a real search service indexes it, on the run's nats-server with names of their own.
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { InfraNames } from "../services/config/names.ts";
import { NAME_VARIABLES, type NameKey } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { OUTLINE_TOOL, operationsBackend, promptUri } from "../services/prompt-builder/mcp.ts";
import { createMcpHttp } from "../services/prompt-builder/mcp-http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { serveNatsApi, type NatsApi } from "../services/prompt-builder/nats-api.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import { forwardSearch } from "../services/prompt-builder/search-forward.ts";
import { SEARCH_TOOL, ZOOM_TOOL } from "../services/api/tools.ts";
import { startSearchService, type SearchService } from "../services/search/service.ts";
import type { ThreadWorker } from "../services/thread-worker/worker.ts";
import type { Message } from "../shared/events.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import {
  harness,
  publishMessage,
  readSnapshot,
  uniqueNames,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { startSmallWorker } from "./support/worker-scope.ts";

const T = "mcp-facts";
const OTHER = "mcp-other";
const COUNT = 120;
const TOKEN = "t".repeat(40);
const FACTS: Record<number, string> = {
  17: "Ana: the Locker Code is 4711, keep it to yourself",
  90: "invoice number INV-2026-0042 was paid on Friday",
};
const SECRET = "the other thread's password is swordfish";

function message(thread: string, i: number): Message {
  return {
    id: `${thread}-m${i}`,
    thread,
    at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    from: i % 2 === 0 ? "Ana" : "north",
    role: i % 2 === 0 ? "user" : "assistant",
    text: thread === OTHER && i === 3 ? SECRET : (FACTS[i] ?? `filler ${i} about nothing much`),
  };
}

let nc: NatsConnection;
let h: Harness;
let worker: ThreadWorker;
let dir: string;
let service: SearchService;
let snapshot: OutlineSnapshot;
/** Search on: served over HTTP and, for `outline mcp`, over NATS on the harness' prefix. */
let server: Server;
let base: string;
let natsApi: NatsApi;
/** Search off: the same streams, another API prefix on which no search service answers. */
let offNames: InfraNames;
let offServer: Server;
let offBase: string;
let offApi: NatsApi;
const clients: Client[] = [];

function serve(names: InfraNames, search: boolean) {
  const operations = createOperations(createReader(nc, names), { search });
  const metrics = createMetrics(nc, {
    workerSubject: `${names.apiPrefix}.metrics.worker`,
    workerTimeoutMs: 100,
  });
  const forward = forwardSearch(nc, names.apiPrefix, { on: search });
  return {
    api: serveNatsApi(nc, names.apiPrefix, operations, metrics, () => {}),
    http: createHttpServer({
      operations,
      metrics,
      health: natsHealth(nc),
      token: TOKEN,
      log: () => {},
      search: forward,
      mcp: createMcpHttp(operationsBackend(operations, forward, search)),
    }),
  };
}

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "mcp-test" });
  const names = uniqueNames();
  await ensureTopology(nc, names);
  h = await harness(nc, names);
  worker = await startSmallWorker(h);
  for (let i = 0; i < COUNT; i++) await publishMessage(h, message(T, i));
  for (let i = 0; i < 8; i++) await publishMessage(h, message(OTHER, i));
  await waitSettled(h, [T, OTHER]);
  snapshot = (await readSnapshot(h, T)) as OutlineSnapshot;
  dir = mkdtempSync(join(tmpdir(), "outline-mcp-"));
  service = await startSearchService({
    nc,
    names,
    path: join(dir, "search.db"),
    log: () => {},
    idleCheckMs: 200,
  });
  await service.indexer.ready;
  const on = serve(names, true);
  natsApi = on.api;
  server = on.http;
  base = `http://127.0.0.1:${(await listen(server, "127.0.0.1", 0)).port}`;
  offNames = { ...names, apiPrefix: `${names.apiPrefix}off` };
  const off = serve(offNames, false);
  offApi = off.api;
  offServer = off.http;
  offBase = `http://127.0.0.1:${(await listen(offServer, "127.0.0.1", 0)).port}`;
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  for (const s of [server, offServer]) if (s) await new Promise((r) => s.close(r));
  await natsApi?.drain();
  await offApi?.drain();
  await service?.stop().catch(() => {});
  await worker?.stop();
  await nc?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Via = "http" | "stdio";

function transportFor(via: Via, thread: string, names: InfraNames, url: string): Transport {
  if (via === "http") {
    return new StreamableHTTPClientTransport(new URL(`${url}/threads/${thread}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    });
  }
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  for (const key of Object.keys(NAME_VARIABLES) as NameKey[]) env[NAME_VARIABLES[key]] = names[key];
  env.NATS_URL = inject("natsUrl");
  return new StdioClientTransport({
    command: process.execPath,
    args: [join(process.cwd(), "services/cli/bin.js"), "mcp", thread],
    env,
    stderr: "pipe",
  });
}

async function connect(via: Via, thread = T, off = false): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  await client.connect(transportFor(via, thread, off ? offNames : h.names, off ? offBase : base));
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const [first] = result.content;
  if (first?.type !== "text") throw new Error(`no text content: ${JSON.stringify(result)}`);
  return { isError: result.isError === true, json: JSON.parse(first.text) as unknown };
}

/** What GET /threads/{thread}/<path> answers: the API's body, as the tools must carry it. */
async function apiGet(path: string, url = base): Promise<unknown> {
  const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return res.json();
}

interface ZoomLines {
  lines: { id: number; n: number; text: string }[];
}
interface ZoomMessage {
  message: { id: string; position: number; text: string };
}

describe.each<Via>(["http", "stdio"])("MCP over %s", (via) => {
  let client: Client;
  beforeAll(async () => {
    client = await connect(via);
  }, 60_000);

  it("lists zoom, search and outline with the API's own definitions", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["zoom", "search", "outline"]);
    for (const def of [ZOOM_TOOL, SEARCH_TOOL, OUTLINE_TOOL]) {
      const tool = tools.find((t) => t.name === def.function.name);
      expect(tool?.description).toBe(def.function.description);
      expect(tool?.inputSchema).toEqual(def.function.parameters);
    }
    // No tool takes the thread: the URL or the command line fixed it.
    for (const t of tools)
      expect(Object.keys(t.inputSchema.properties ?? {})).not.toContain("thread");
  });

  it("zooms from a top line down to a message, as GET /zoom answers", async () => {
    const top = snapshot.lines.find((l) => l.n > 1);
    expect(top).toBeDefined();
    let { id, n } = top as { id: number; n: number };
    while (n > 1) {
      const got = await call(client, "zoom", { id, n });
      expect(got.isError).toBe(false);
      expect(got.json).toEqual(await apiGet(`/threads/${T}/zoom?id=${id}&n=${n}`));
      const first = (got.json as ZoomLines).lines[0] as { id: number; n: number };
      expect(first.n).toBe(n / 2);
      ({ id, n } = first);
    }
    const leaf = await call(client, "zoom", { id, n: 1 });
    expect(leaf.isError).toBe(false);
    expect((leaf.json as ZoomMessage).message).toMatchObject({
      id: `${T}-m${id}`,
      position: id,
      text: message(T, id).text,
    });
  });

  it("finds a fact with search, and reads it whole with zoom", async () => {
    const found = await call(client, "search", { q: "locker cod" });
    expect(found.isError).toBe(false);
    const hits = (found.json as { hits: { id: number; message: string }[] }).hits;
    expect(hits.map((x) => x.id)).toEqual([17]);
    const read = await call(client, "zoom", { id: 17, n: 1 });
    expect((read.json as ZoomMessage).message.text).toBe(FACTS[17]);
  });

  it("serves the outline, and the prompt as a resource byte for byte", async () => {
    const outline = await call(client, "outline", {});
    expect(outline.json).toEqual(await apiGet(`/threads/${T}/outline`));
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual([promptUri(T)]);
    const res = await fetch(`${base}/threads/${T}/prompt?agent=north&format=anthropic`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const read = await client.readResource({
      uri: `${promptUri(T)}?agent=north&format=anthropic`,
    });
    expect(read.contents[0]).toMatchObject({ text: await res.text() });
  });

  it("answers a bad call with a tool error carrying the API's message", async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ id: 3, n: 2 }, "id=3&n=2", "ID_NOT_MULTIPLE_OF_N"],
      [{ id: 0, n: 3 }, "id=0&n=3", "N_NOT_POWER_OF_TWO"],
      [{ id: 0, n: 1024 }, "id=0&n=1024", "NO_SUCH_LINE"], // an unknown line
      [{ id: 4096, n: 1 }, "id=4096&n=1", "ID_PAST_END"],
      [{ id: "x", n: 1 }, "id=x&n=1", "NOT_A_NUMBER"],
      [{ n: 1 }, "n=1", "MISSING_ARGUMENT"],
    ];
    for (const [args, query, code] of cases) {
      const got = await call(client, "zoom", args);
      expect(got, JSON.stringify(args)).toMatchObject({ isError: true, json: { error: { code } } });
      expect(got.json).toEqual(await apiGet(`/threads/${T}/zoom?${query}`));
    }
    const noQ = await call(client, "search", {});
    expect(noQ.isError).toBe(true);
    expect(noQ.json).toEqual(await apiGet(`/threads/${T}/search`));
    const unknown = await call(client, "summon", {});
    expect(unknown).toMatchObject({ isError: true, json: { error: { code: "NO_SUCH_TOOL" } } });
  });

  it("cannot reach another thread's data", async () => {
    // The other thread exists and holds the secret; this server's thread does not.
    const other = await apiGet(`/threads/${OTHER}/search?q=swordfish`);
    expect((other as { hits: unknown[] }).hits).toHaveLength(1);
    expect((await call(client, "search", { q: "swordfish" })).json).toMatchObject({ hits: [] });
    const named = await call(client, "zoom", { id: 3, n: 1, thread: OTHER });
    expect(named).toMatchObject({ isError: true, json: { error: { code: "BAD_ARGUMENT" } } });
    expect(JSON.stringify(named.json)).not.toContain("swordfish");
    await expect(client.readResource({ uri: promptUri(OTHER) })).rejects.toThrow(
      /no resource outline:\/\/threads\/mcp-other\/prompt/,
    );
  });

  it("with search off, lists no search and answers a call with SEARCH_OFF", async () => {
    const off = await connect(via, T, true);
    const { tools } = await off.listTools();
    expect(tools.map((t) => t.name)).toEqual(["zoom", "outline"]);
    const got = await call(off, "search", { q: "locker" });
    expect(got).toMatchObject({ isError: true, json: { error: { code: "SEARCH_OFF" } } });
    expect(got.json).toEqual(await apiGet(`/threads/${T}/search?q=locker`, offBase));
  });
});

describe("MCP over HTTP", () => {
  it("requires the API's token", async () => {
    const client = new Client({ name: "mcp-test", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/threads/${T}/mcp`));
    await expect(client.connect(transport)).rejects.toThrow(/401|UNAUTHORIZED/);
    const wrong = new StreamableHTTPClientTransport(new URL(`${base}/threads/${T}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${"w".repeat(40)}` } },
    });
    await expect(new Client({ name: "x", version: "1" }).connect(wrong)).rejects.toThrow(
      /UNAUTHORIZED/,
    );
  });

  it("refuses a call from another site's web page (Origin), and serves its own", async () => {
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const post = (origin: string) =>
      fetch(`${base}/threads/${T}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          origin,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify(ping),
      });
    const foreign = await post("https://evil.example");
    expect(foreign.status).toBe(403);
    expect(await foreign.json()).toMatchObject({ error: { code: "FORBIDDEN_ORIGIN" } });
    const own = await post(new URL(base).origin);
    expect(own.status).toBe(200);
    expect(await own.json()).toMatchObject({ id: 1, result: {} });
  });

  it("answers a bad thread id, GET and a body that is not JSON with clear errors", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const bad = await fetch(`${base}/threads/no%20good/mcp`, { method: "POST", headers: auth });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "BAD_THREAD_ID" } });
    const get = await fetch(`${base}/threads/${T}/mcp`, { headers: auth });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const junk = await fetch(`${base}/threads/${T}/mcp`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{not json",
    });
    expect(junk.status).toBe(400);
    expect(await junk.json()).toMatchObject({ error: { code: -32700 } });
  });
});
