import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { checkHost, checkOrigin } from "../api/origin.ts";
import { bearerMatches } from "../api/access.ts";
import { ApiError, errorBody } from "../api/api-error.ts";
import type { Explorer } from "../explorer/explorer.ts";
import type { Health } from "./health.ts";
import type { McpHttp } from "./mcp-http.ts";
import { METRICS_CONTENT_TYPE, type ApiMetrics } from "./metrics.ts";
import type { Operations } from "../api/operations-interface.ts";
import type { RawRequest } from "../api/requests.ts";
import { searchArgs } from "../search/search.ts";
import { OPENAPI } from "./openapi.ts";
import type { SearchForward } from "./search-forward.ts";

/** Longest request target served; longer is a 414 (no query of ours comes close). */
export const MAX_URL = 8_192;
/** Node answers a bare 431 past its header limit; below it, our own JSON 414 applies. */
const MAX_HEADER_BYTES = 64 * 1024;
/** Our requests are GETs: a body is never read, and a large one is refused outright. */
const MAX_BODY = 64 * 1024;

const OPERATIONS = ["prompt", "zoom", "outline", "tools", "search"] as const;
type Operation = (typeof OPERATIONS)[number];

export interface HttpOptions {
  operations: Operations;
  metrics: ApiMetrics;
  health: Health;
  /** Required as `Authorization: Bearer <token>` on every route but /healthz and /openapi.json when set. */
  token: string | undefined;
  /** Where unexpected failures are reported (never the request's data). */
  log?: (line: string) => void;
  /** The web explorer under /ui (its own auth: the same token, or its session cookie). */
  explorer?: Explorer | undefined;
  /** GET /threads/{thread}/search, answered by a search service (absent: 501, search is off). */
  search?: SearchForward;
  /** GET /cluster: who owns what (docs/scale-out.md). */
  cluster?: () => Promise<unknown>;
  /** POST /threads/{thread}/mcp: the thread's tools over MCP (behind the same token). */
  mcp?: McpHttp;
}

const searchOff: SearchForward = (raw) => {
  searchArgs(raw);
  return Promise.reject(
    new ApiError(501, "SEARCH_OFF", "search is not served here: set HISTORY_SEARCH=on and restart"),
  );
};

/** Sends JSON: a value, or its text already encoded (a search answer forwarded). */
function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const data = body instanceof Uint8Array ? body : JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(typeof data === "string" ? Buffer.byteLength(data) : data.length),
    "cache-control": "no-store",
    ...headers,
  });
  res.end(data);
}

/** Sends a prompt body's chunks (Operations.promptChunks) in one write of the socket. */
function sendChunks(res: ServerResponse, chunks: readonly Uint8Array[]) {
  res.writeHead(200, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(chunks.reduce((sum, chunk) => sum + chunk.length, 0)),
    "cache-control": "no-store",
  });
  res.cork();
  for (const chunk of chunks) res.write(chunk);
  res.uncork();
  res.end();
}

function sendError(res: ServerResponse, err: ApiError, headers: Record<string, string> = {}) {
  const retry: Record<string, string> =
    err.retryAfter === undefined ? {} : { "retry-after": String(err.retryAfter) };
  send(res, err.status, errorBody(err), { ...retry, ...headers });
}

/** A route a server serves: its method, its path as /openapi.json names it, a hint of its query. */
export interface ServedRoute {
  method: "GET" | "POST";
  path: string;
  query?: string;
  /** What a route other than GET serves, for the 404 and 405 hint. */
  about?: string;
}

/**
 * The routes a server made with `options` serves besides the explorer, method and path as
 * /openapi.json names them, each with a hint of its query: no others (test/openapi.int.test.ts
 * holds the document to this list, both ways).
 */
export function servedRoutes(
  options: Pick<HttpOptions, "search" | "cluster" | "mcp">,
): ServedRoute[] {
  const get = (path: string, query?: string): ServedRoute =>
    query === undefined ? { method: "GET", path } : { method: "GET", path, query };
  return [
    get("/threads/{thread}/prompt", "agent=…&from=…&format=openai|anthropic"),
    get("/threads/{thread}/zoom", "id=…&n=…"),
    get("/threads/{thread}/outline"),
    get("/threads/{thread}/tools"),
    ...(options.search ? [get("/threads/{thread}/search", "q=…&before=…&limit=…")] : []),
    get("/healthz"),
    get("/metrics"),
    ...(options.cluster ? [get("/cluster")] : []),
    get("/openapi.json"),
    ...(options.mcp
      ? [{ method: "POST", path: "/threads/{thread}/mcp", about: "MCP" } as const]
      : []),
  ];
}

/** The routes a server made with `options` serves, for its 404 and 405 answers. */
export function routesHint(
  options: Pick<HttpOptions, "explorer" | "search" | "cluster" | "mcp">,
): string {
  const routes = servedRoutes(options);
  const gets = routes
    .filter((r) => r.method === "GET")
    .map((r) => (r.query ? `${r.path}?${r.query}` : r.path));
  const others = routes
    .filter((r) => r.method !== "GET")
    .map((r) => `; ${r.about ?? "also"} at ${r.method} ${r.path}`);
  return `routes: GET ${gets.join(", ")}${others.join("")}${options.explorer ? "; the explorer at /ui/" : ""}`;
}

type Route =
  | { kind: "healthz" }
  | { kind: "openapi" }
  | { kind: "metrics" }
  | { kind: "cluster" }
  | { kind: "thread"; op: Operation; raw: RawRequest };

function route(target: string, hint: string): Route {
  let url: URL;
  try {
    url = new URL(target, "http://outline.invalid");
  } catch {
    throw new ApiError(400, "BAD_URL", `'${target.slice(0, 80)}' is not a valid request target`);
  }
  if (url.pathname === "/healthz") return { kind: "healthz" };
  if (url.pathname === "/openapi.json") return { kind: "openapi" };
  if (url.pathname === "/metrics") return { kind: "metrics" };
  if (url.pathname === "/cluster") return { kind: "cluster" };
  const parts = url.pathname.split("/");
  if (parts.length === 4 && parts[0] === "" && parts[1] === "threads") {
    const op = parts[3] as Operation;
    if (OPERATIONS.includes(op)) {
      let thread: string;
      try {
        thread = decodeURIComponent(parts[2] ?? "");
      } catch {
        throw new ApiError(
          400,
          "BAD_THREAD_ID",
          `the thread id in '${url.pathname.slice(0, 160)}' is not valid percent-encoding: a thread id is 1–128 characters of A-Z, a-z, 0-9, '_' or '-'`,
        );
      }
      const raw: Record<string, unknown> = {};
      for (const [key, value] of url.searchParams) if (!(key in raw)) raw[key] = value;
      // The path names the thread; a `thread` query parameter must not override it.
      raw.thread = thread;
      return { kind: "thread", op, raw };
    }
  }
  throw new ApiError(404, "NO_SUCH_ROUTE", `no route ${url.pathname.slice(0, 160)}; ${hint}`);
}

/** The HTTP face of the prompt-builder (SPEC §8): routing, limits, auth and JSON errors only. */
export function createHttpServer(options: HttpOptions): Server {
  const log = options.log ?? ((line: string) => console.error(line));
  const hint = routesHint(options);
  const openapiText = new TextEncoder().encode(JSON.stringify(OPENAPI));

  function authorize(req: IncomingMessage, res: ServerResponse): void {
    if (options.token !== undefined && !bearerMatches(req.headers.authorization, options.token)) {
      res.setHeader("www-authenticate", 'Bearer realm="outline"');
      throw new ApiError(
        401,
        "UNAUTHORIZED",
        "this API requires 'Authorization: Bearer <token>' with the token in OUTLINE_API_TOKEN",
      );
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = req.url ?? "/";
    if (target.length > MAX_URL) {
      throw new ApiError(
        414,
        "URI_TOO_LONG",
        `the request target is ${target.length} characters; at most ${MAX_URL} are served: send shorter arguments`,
      );
    }
    // What needs no token needs no host either: it holds no thread's data.
    const path = target.split("?", 1)[0];
    if (path !== "/healthz" && path !== "/openapi.json") {
      checkHost(req.headers.host, options.token === undefined);
    }
    // MCP is POSTed JSON-RPC: its own methods and body limit (mcp-http.ts), the same token.
    if (options.mcp?.serves(target)) {
      checkOrigin(req.headers.origin, req.headers.host);
      authorize(req, res);
      return options.mcp.handle(req, res);
    }
    const length = Number(req.headers["content-length"] ?? 0);
    if (req.headers["transfer-encoding"] !== undefined || length > MAX_BODY) {
      res.setHeader("connection", "close");
      throw new ApiError(
        413,
        "BODY_TOO_LARGE",
        `this API takes GET requests without a body (got ${req.headers["transfer-encoding"] ? "a chunked body" : `${length} bytes`}); send the arguments in the query string`,
      );
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("allow", "GET");
      throw new ApiError(
        405,
        "METHOD_NOT_ALLOWED",
        `${req.method} is not served: every route is GET; ${hint}`,
      );
    }
    if (options.explorer?.serves(target)) return options.explorer.handle(req, res);
    const r = route(target, hint);
    if (r.kind === "healthz") {
      const report = await options.health.check();
      send(res, report.ok ? 200 : 503, report);
      return;
    }
    // Public like /healthz: it describes the API and holds no thread's data.
    if (r.kind === "openapi") {
      send(res, 200, openapiText);
      return;
    }
    authorize(req, res);
    if (r.kind === "cluster") {
      if (!options.cluster) throw new ApiError(404, "NOT_FOUND", `no route /cluster; ${hint}`);
      send(res, 200, await options.cluster());
      return;
    }
    if (r.kind === "metrics") {
      const text = await options.metrics.render();
      res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store" });
      res.end(text);
      return;
    }
    const started = performance.now();
    let status = 200;
    try {
      const ops = options.operations;
      const search = options.search ?? searchOff;
      if (r.op === "prompt") sendChunks(res, await ops.promptChunks(r.raw));
      else send(res, 200, await (r.op === "search" ? search(r.raw) : ops[r.op](r.raw)));
    } catch (err) {
      status = err instanceof ApiError ? err.status : 500;
      throw err;
    } finally {
      options.metrics.observe(r.op, "http", status, (performance.now() - started) / 1000);
    }
  }

  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => {
    // Never read (but by MCP): a client's body is drained so the connection can serve the next
    // request.
    if (!options.mcp?.serves(req.url ?? "/")) req.resume();
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof ApiError) {
        sendError(res, err);
        return;
      }
      log(
        `prompt-builder: ${req.method} ${(req.url ?? "").slice(0, 200)} failed: ${(err as Error).stack ?? String(err)}`,
      );
      sendError(
        res,
        new ApiError(
          500,
          "INTERNAL",
          `the prompt-builder failed: ${(err as Error).message}; see its log`,
        ),
      );
    });
  });

  // Requests Node rejects before our handler (headers past the limit, malformed HTTP) still get
  // a JSON error, then the connection is closed.
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const [status, code, message] =
      err.code === "HPE_HEADER_OVERFLOW"
        ? [
            431,
            "HEADERS_TOO_LARGE",
            `request line and headers exceed ${MAX_HEADER_BYTES} bytes; send shorter arguments`,
          ]
        : [400, "BAD_HTTP", `the request is not valid HTTP/1.1 (${err.code ?? err.message})`];
    const text = JSON.stringify(errorBody(new ApiError(status, code, message)));
    const reason = status === 431 ? "Request Header Fields Too Large" : "Bad Request";
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  });
  return server;
}

/** Listens and resolves with the bound address; a taken port rejects with what to do. */
export function listen(server: Server, host: string, port: number): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        err.code === "EADDRINUSE"
          ? new Error(
              `PORT: ${host}:${port} is already in use; stop what listens there or set PORT to a free port`,
            )
          : err.code === "EADDRNOTAVAIL"
            ? new Error(
                `HOST: ${host} is not an address of this machine; set HOST to one (e.g. 127.0.0.1)`,
              )
            : err,
      );
    };
    server.once("error", onError);
    server.listen(port, host, () => {
      server.off("error", onError);
      resolve(server.address() as AddressInfo);
    });
  });
}
