// GET /openapi.json against a real validator, the routes the server serves, and real answers
// (from a prompt-builder and a search service on a real nats-server, as main.ts wires them);
// and the typed client against the same server over HTTP and NATS.
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ApiError, createClient, type OutlineClient } from "../services/client/client.ts";
import { clusterView, serveCluster } from "../services/cluster/view.ts";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen, servedRoutes } from "../services/prompt-builder/http.ts";
import { operationsBackend } from "../services/prompt-builder/mcp.ts";
import { createMcpHttp, type McpHttp } from "../services/prompt-builder/mcp-http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { statusHeaders } from "../services/api/nats-wire.ts";
import { serveNatsApi, type NatsApi } from "../services/prompt-builder/nats-api.ts";
import { OPENAPI } from "../services/prompt-builder/openapi.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import { forwardSearch } from "../services/prompt-builder/search-forward.ts";
import { startSearchService, type SearchService } from "../services/search/service.ts";
import { freePort } from "../services/util/processes.ts";
import { makeMessage } from "./support/conversation.ts";
import {
  publishMessages,
  publishState,
  replayWithNodes,
  uniqueNames,
} from "./support/outline-fixture.ts";
import { SMALL_SETTINGS } from "./support/prompt-builder-api.ts";

const TOKEN = "openapi-test-token-0123456789";
const thread = "oa-thread";
const N = 120;

let nc: NatsConnection;
let names: InfraNames;
let server: Server;
let base: string;
let natsApi: NatsApi;
let cluster: { drain(): Promise<void> };
let search: SearchService;
let dir: string;
let http: OutlineClient;
let nats: OutlineClient;
let mcp: McpHttp;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "openapi-test" });
  names = uniqueNames();
  const { js, kv } = await ensureTopology(nc, names);
  const log = await publishMessages(
    js,
    names,
    Array.from({ length: N }, (_, i) =>
      makeMessage(thread, i, `message ${i}: the parcel for locker ${1000 + i} is ready`),
    ),
  );
  const { state, nodes } = replayWithNodes(thread, SMALL_SETTINGS, log.slice(0, N - 10));
  await publishState(js, kv, names, state, nodes);

  dir = mkdtempSync(join(tmpdir(), "outline-openapi-"));
  search = await startSearchService({ nc, names, path: join(dir, "s.db"), log: () => {} });
  await search.indexer.ready;
  const metrics = createMetrics(nc, {
    workerSubject: `${names.apiPrefix}.metrics.worker`,
    workerTimeoutMs: 100,
  });
  const operations = createOperations(createReader(nc, names), { search: true });
  const view = clusterView(nc, names);
  const searchForward = forwardSearch(nc, names.apiPrefix, { on: true });
  mcp = createMcpHttp(operationsBackend(operations, searchForward, true));
  server = createHttpServer({
    operations,
    metrics,
    health: natsHealth(nc),
    token: TOKEN,
    log: () => {},
    search: searchForward,
    cluster: view,
    mcp,
  });
  base = `http://127.0.0.1:${(await listen(server, "127.0.0.1", 0)).port}`;
  natsApi = serveNatsApi(nc, names.apiPrefix, operations, metrics, () => {});
  cluster = serveCluster(nc, names, view, () => {});
  http = createClient({ url: base, token: TOKEN });
  nats = createClient({ nats: nc, apiPrefix: names.apiPrefix });
});

afterAll(async () => {
  await natsApi?.drain();
  await cluster?.drain();
  await search?.stop();
  await new Promise((r) => server?.close(r));
  await nc?.close();
  rmSync(dir, { recursive: true, force: true });
});

type Schema = Record<string, unknown>;
type Content = Record<string, { schema: Schema }>;
interface Operation {
  requestBody?: { content: Content };
  responses: Record<string, { headers?: Schema; content?: Content }>;
}
const doc = OPENAPI as unknown as {
  paths: Record<string, Record<string, Operation>>;
  components: Schema;
};
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
/** The document's operations as "METHOD /path". */
const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.keys(item)
    .filter((key) => METHODS.includes(key))
    .map((method) => `${method.toUpperCase()} ${path}`),
);
const MCP_ROUTE = "POST /threads/{thread}/mcp";

/**
 * The document's schemas with every object closed (additionalProperties: false): an answer
 * field the document does not name fails, so a field added to the API must be added here too.
 */
function closed<T>(value: T): T {
  if (Array.isArray(value)) return value.map(closed) as T;
  if (value === null || typeof value !== "object") return value;
  const out = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, closed(v)]));
  if ("properties" in out && !("additionalProperties" in out)) out.additionalProperties = false;
  return out as T;
}
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const components = closed(doc.components);

function validates(schema: Schema | undefined, value: unknown, what: string): void {
  const validate = ajv.compile({ ...closed(schema), components });
  expect(validate(value), `${what}: ${ajv.errorsText(validate.errors)}`).toBe(true);
}

/**
 * Checks an answer against what the document says `path` answers with its status (a GET, or
 * the method and body of `init`, whose JSON body must fit the document's request schema).
 */
async function conforms(
  path: string,
  target: string,
  auth = true,
  at = base,
  init: {
    method: string;
    headers?: Record<string, string>;
    body?: string;
    /** The documented method whose answers hold this one, when it is not `method` (a 405). */
    documentedAs?: string;
  } = { method: "GET" },
): Promise<Response> {
  const method = init.documentedAs ?? init.method;
  const operation = doc.paths[path]?.[method.toLowerCase()];
  expect(operation, `${method} ${path} is not in the document`).toBeDefined();
  const res = await fetch(`${at}${target}`, {
    method: init.method,
    headers: { ...(auth ? { authorization: `Bearer ${TOKEN}` } : {}), ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const documented = operation?.responses[String(res.status)];
  expect(documented, `${target}: status ${res.status} is not in the document`).toBeDefined();
  if (!documented?.content) {
    expect(await res.text(), `${target}: ${res.status} is documented without a body`).toBe("");
    return res;
  }
  const type = (res.headers.get("content-type") ?? "").split(";")[0] as string;
  const media = documented.content[type];
  expect(media, `${target}: ${type} is not documented for ${res.status}`).toBeDefined();
  if (res.headers.has("retry-after"))
    expect(documented?.headers, `${target}: Retry-After undocumented`).toHaveProperty(
      "Retry-After",
    );
  if (type === "application/json") validates(media?.schema, await res.clone().json(), target);
  return res;
}

describe("GET /openapi.json", () => {
  it("is valid OpenAPI 3.1 to swagger-parser, and served without the token", async () => {
    const res = await fetch(`${base}/openapi.json`);
    expect(res.status).toBe(200);
    const served = (await res.json()) as typeof doc;
    expect(served).toEqual(JSON.parse(JSON.stringify(OPENAPI)));
    const api = await SwaggerParser.validate(structuredClone(served) as never);
    expect((api as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("names every route the server serves, and no other", async () => {
    const served = servedRoutes({
      search: () => Promise.resolve(new Uint8Array()),
      cluster: () => Promise.resolve({}),
      mcp,
    }).map((r) => `${r.method} ${r.path}`);
    expect([...documented].sort()).toEqual([...served].sort());
    // MCP is POSTed, the one route that is not GET: neither side may lose it.
    expect(documented).toContain(MCP_ROUTE);
    expect(served).toContain(MCP_ROUTE);
    // Any other path is no route at all.
    const known = new Set(Object.keys(doc.paths).map((p) => p.replace("{thread}", thread)));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.stringMatching(/^[a-z0-9._-]{1,12}$/), { minLength: 1, maxLength: 4 }),
        async (parts) => {
          const path = `/${parts.join("/")}`;
          fc.pre(!known.has(path) && !path.startsWith("/ui"));
          const res = await fetch(`${base}${path}`, {
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          const body = (await res.json()) as { error: { code: string } };
          expect([res.status, body.error.code]).toEqual([404, "NO_SUCH_ROUTE"]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("describes the real answers: each status, its schema and its Retry-After", async () => {
    const t = `/threads/${thread}`;
    const cases: [string, string, number, boolean?][] = [
      ["/threads/{thread}/prompt", `${t}/prompt?agent=north`, 200],
      ["/threads/{thread}/prompt", `${t}/prompt?agent=north&format=anthropic`, 200],
      ["/threads/{thread}/prompt", `${t}/prompt?format=xml`, 400],
      ["/threads/{thread}/prompt", `${t}/prompt`, 401, false],
      ["/threads/{thread}/prompt", `/threads/nobody/prompt`, 404],
      ["/threads/{thread}/zoom", `${t}/zoom?id=0&n=4`, 200],
      ["/threads/{thread}/zoom", `${t}/zoom?id=3&n=1`, 200],
      ["/threads/{thread}/zoom", `${t}/zoom?id=${N - 1}&n=1&limit=5`, 200],
      ["/threads/{thread}/zoom", `${t}/zoom?id=0&n=3`, 400],
      ["/threads/{thread}/outline", `${t}/outline`, 200],
      ["/threads/{thread}/tools", `${t}/tools`, 200],
      ["/threads/{thread}/search", `${t}/search?q=locker%201007`, 200],
      ["/threads/{thread}/search", `${t}/search`, 400],
      ["/cluster", `/cluster`, 200],
      ["/healthz", `/healthz`, 200, false],
      ["/metrics", `/metrics`, 200],
      ["/openapi.json", `/openapi.json`, 200, false],
    ];
    for (const [path, target, status, auth] of cases) {
      const res = await conforms(path, target, auth ?? true);
      expect(res.status, target).toBe(status);
    }
  });
});

describe("POST /threads/{thread}/mcp", () => {
  const path = "/threads/{thread}/mcp";
  const target = `/threads/${thread}/mcp`;
  const headers = {
    accept: "application/json, text/event-stream",
    "content-type": "application/json",
  };
  const request = doc.paths[path]?.post?.requestBody?.content["application/json"]?.schema;
  /** POSTs `message` as the document describes it, and checks the answer against it. */
  async function post(
    message: unknown,
    more: { headers?: Record<string, string>; auth?: boolean; at?: string } = {},
  ): Promise<Response> {
    const body = typeof message === "string" ? message : JSON.stringify(message);
    if (typeof message !== "string") validates(request, message, "the request");
    return conforms(path, more.at ?? target, more.auth ?? true, base, {
      method: "POST",
      headers: { ...headers, ...more.headers },
      body,
    });
  }

  it("describes real MCP answers: initialize and tools/list against the document's schema", async () => {
    const init = await post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "openapi-test", version: "1" },
      },
    });
    expect(init.status).toBe(200);
    const initialized = (await init.json()) as { id: number; result: { serverInfo: unknown } };
    expect(initialized).toMatchObject({ jsonrpc: "2.0", id: 1 });
    expect(initialized.result.serverInfo).toBeDefined();

    const version = { "mcp-protocol-version": "2025-06-18" };
    const list = await post(
      { jsonrpc: "2.0", id: "l", method: "tools/list" },
      { headers: version },
    );
    expect(list.status).toBe(200);
    const listed = (await list.json()) as { result: { tools: { name: string }[] } };
    expect(listed.result.tools.map((t) => t.name).sort()).toEqual(["outline", "search", "zoom"]);

    const notified = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(notified.status).toBe(202);
  });

  it("describes each error it answers, with the status the server gives", async () => {
    const ping = { jsonrpc: "2.0", id: 7, method: "ping" };
    const cases: [string, () => Promise<Response>, number][] = [
      ["no token", () => post(ping, { auth: false }), 401],
      ["a bad thread id", () => post(ping, { at: "/threads/no%20good/mcp" }), 400],
      ["a body that is not JSON", () => post("{not json"), 400],
      ["not a JSON-RPC message", () => post(JSON.stringify({ hello: 1 })), 400],
      [
        "an unsupported protocol version",
        () => post(ping, { headers: { "mcp-protocol-version": "1999-01-01" } }),
        400,
      ],
      [
        "an Accept without event-stream",
        () => post(ping, { headers: { accept: "application/json" } }),
        406,
      ],
      [
        "a body that is not application/json",
        () => post(ping, { headers: { "content-type": "text/plain" } }),
        415,
      ],
      [
        "a body over 1 MB",
        () => post(JSON.stringify({ ...ping, pad: "x".repeat(1024 * 1024) })),
        413,
      ],
      [
        "GET",
        () => conforms(path, target, true, base, { method: "GET", documentedAs: "POST" }),
        405,
      ],
      [
        "DELETE",
        () => conforms(path, target, true, base, { method: "DELETE", documentedAs: "POST" }),
        405,
      ],
    ];
    for (const [what, ask, status] of cases) {
      const res = await ask();
      expect(res.status, what).toBe(status);
      if (status === 405) expect(res.headers.get("allow"), what).toBe("POST");
    }
  });
});

describe("the typed client", () => {
  it("gets the same answers over HTTP and NATS", async () => {
    const asks: ((c: OutlineClient) => Promise<unknown>)[] = [
      (c) => c.prompt({ thread, agent: "north" }),
      (c) => c.prompt({ thread, format: "anthropic" }),
      (c) => c.zoom({ thread, id: 0, n: 4 }),
      (c) => c.zoom({ thread, id: 5, n: 1, limit: 3 }),
      (c) => c.outline({ thread }),
      (c) => c.tools({ thread }),
      (c) => c.search({ thread, q: "locker 1007" }),
      (c) => c.cluster(),
    ];
    for (const ask of asks) {
      const [overHttp, overNats] = await Promise.all([ask(http), ask(nats)]);
      expect(overHttp).toEqual(overNats);
    }
    const found = await http.search({ thread, q: "locker 1007" });
    expect(found.hits.map((h) => h.id)).toEqual([7]);
    const message = await nats.zoom({ thread, id: found.hits[0]?.id ?? -1, n: 1 });
    expect("message" in message && message.message.text).toBe(
      "message 7: the parcel for locker 1007 is ready",
    );
  });

  it("throws the API's errors typed, with code and status, on both transports", async () => {
    const failures: [(c: OutlineClient) => Promise<unknown>, number, string][] = [
      [(c) => c.outline({ thread: "nobody" }), 404, "THREAD_NOT_FOUND"],
      [(c) => c.zoom({ thread, id: 0, n: 3 }), 400, "N_NOT_POWER_OF_TWO"],
      [(c) => c.prompt({ thread: "no/such" }), 400, "BAD_THREAD_ID"],
      [(c) => c.search({ thread, q: "" }), 400, "MISSING_QUERY"],
    ];
    for (const client of [http, nats]) {
      for (const [ask, status, code] of failures) {
        const err = await ask(client).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ApiError);
        expect(err).toMatchObject({ status, code });
      }
    }
    const noToken = await createClient({ url: base })
      .tools({ thread })
      .catch((e: unknown) => e);
    expect(noToken).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    const nobody = await createClient({ nats: nc, apiPrefix: `${names.apiPrefix}x` })
      .prompt({ thread })
      .catch((e: unknown) => e);
    expect(nobody).toMatchObject({ status: 503, code: "PROMPT_BUILDER_UNAVAILABLE" });
    // Nothing listens on a free port.
    const refused = await createClient({ url: `http://127.0.0.1:${await freePort("127.0.0.1")}` })
      .prompt({ thread })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 503, code: "PROMPT_BUILDER_UNAVAILABLE" });
    expect((refused as Error).message).toContain("ECONNREFUSED");

    // A prompt-builder's 503 over NATS says when to ask again, as HTTP does.
    const prefix = `${names.apiPrefix}b`;
    const behind = serveNatsApi(
      nc,
      prefix,
      createOperations(createReader(nc, names), { maxNewer: 1 }),
      createMetrics(nc, { workerSubject: `${prefix}.metrics.worker` }),
      () => {},
    );
    try {
      const late = await createClient({ nats: nc, apiPrefix: prefix, retries: 0 })
        .prompt({ thread })
        .catch((e: unknown) => e);
      expect(late).toMatchObject({ status: 503, code: "SNAPSHOT_BEHIND", retryAfter: 5 });
    } finally {
      await behind.drain();
    }
  });

  it("waits Retry-After on a 503 and asks again, a bounded number of times", async () => {
    // A search service that is behind for its first `behind` requests, then answers.
    let asked = 0;
    let behind = 1;
    const prefix = `${names.apiPrefix}r`;
    const standIn: Subscription = nc.subscribe(`${prefix}.search`, {
      callback: (_err, msg) => {
        asked += 1;
        const late = asked <= behind;
        const body = late
          ? { error: { code: "SEARCH_INDEX_BEHIND", message: "catching up" } }
          : { hits: [], before: null };
        msg.respond(JSON.stringify(body), statusHeaders(late ? 503 : 200, late ? 1 : undefined));
      },
    });
    const srv = createHttpServer({
      operations: createOperations(createReader(nc, names)),
      metrics: createMetrics(nc, { workerSubject: `${prefix}.metrics.worker` }),
      health: natsHealth(nc),
      token: undefined,
      log: () => {},
      search: forwardSearch(nc, prefix, { on: true }),
    });
    const url = `http://127.0.0.1:${(await listen(srv, "127.0.0.1", 0)).port}`;
    try {
      for (const client of [
        createClient({ nats: nc, apiPrefix: prefix }),
        // The prompt-builder forwards the search service's 503 with its Retry-After.
        createClient({ url }),
      ]) {
        asked = 0;
        const started = Date.now();
        expect(await client.search({ thread, q: "x" })).toEqual({ hits: [], before: null });
        expect(asked).toBe(2);
        expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      }
      asked = 0;
      behind = 10;
      // As the document says: a 503 with its Retry-After.
      const late = await conforms(
        "/threads/{thread}/search",
        `/threads/${thread}/search?q=x`,
        true,
        url,
      );
      expect([late.status, late.headers.get("retry-after")]).toEqual([503, "1"]);
      asked = 0;
      const err = await createClient({ nats: nc, apiPrefix: prefix, retries: 1 })
        .search({ thread, q: "x" })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 503, code: "SEARCH_INDEX_BEHIND", retryAfter: 1 });
      expect(asked).toBe(2);
    } finally {
      standIn.unsubscribe();
      await new Promise((r) => srv.close(r));
    }
  });
});
