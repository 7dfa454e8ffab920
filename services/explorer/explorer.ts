import type { IncomingMessage, ServerResponse } from "node:http";
import type { NatsConnection } from "@nats-io/transport-node";
import type { CoreSettings } from "../../shared/settings.ts";
import type { InfraNames } from "../config/names.ts";
import { ApiError, notFound } from "../api/api-error.ts";
import type { Operations } from "../api/operations-interface.ts";
import type { ThreadReader } from "../nats/reader.ts";
import { beforeArg, limitArg, offsetArg, threadArg, type RawRequest } from "../api/requests.ts";
import { actorStates } from "./actors.ts";
import { bundleExplorer, type ExplorerAssets } from "./assets.ts";
import { liveThreads } from "./live.ts";
import { explorerSession } from "./session.ts";
import { threadLister } from "./thread-list.ts";
import { MAX_TAIL_PAGE, TAIL_PAGE, threadViews } from "./thread-view.ts";
import type { ActorBody, ActorStatesBody, ExplorerConfig } from "./types.ts";

export interface ExplorerOptions {
  nc: NatsConnection;
  names: InfraNames;
  reader: ThreadReader;
  operations: Operations;
  settings: Pick<CoreSettings, "line" | "tail" | "outline">;
  /** The API's token: the explorer asks for it once and keeps a session cookie. */
  token: string | undefined;
  /**
   * Search over a thread's messages (SPEC §8), when the prompt-builder offers it: the page then
   * shows a search box. Given the same arguments as GET /threads/{thread}/search.
   */
  search?: ((raw: RawRequest) => Promise<unknown>) | undefined;
  /** The page's files; default: bundled from services/explorer/ui/ on the first request. */
  assets?: () => Promise<ExplorerAssets>;
}

export interface Explorer {
  /** Whether a request target is the explorer's (everything under /ui, and / that leads there). */
  serves(target: string): boolean;
  /** Answers a GET or HEAD it serves; throws ApiError for the caller to render. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends live streams and feeds (before the HTTP server closes: they would hold it open). */
  close(): void;
}

const HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const shell = (version: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>outline explorer</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/app.css?v=${version}">
<script type="module" src="/ui/assets/app.js?v=${version}"></script>
</head>
<body><div id="app"></div><noscript>The outline explorer needs JavaScript.</noscript></body>
</html>
`;

function send(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  type: string,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...HEADERS,
    "content-type": type,
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
    ...extra,
  });
  res.end(body);
}

function redirect(res: ServerResponse, status: 302 | 308, location: string): void {
  res.writeHead(status, { ...HEADERS, location, "content-length": "0" });
  res.end();
}

const json = (res: ServerResponse, body: unknown, extra: Record<string, string> = {}) =>
  send(res, 200, JSON.stringify(body), "application/json; charset=utf-8", extra);

function queryOf(url: URL, thread?: string): RawRequest {
  const raw: Record<string, unknown> = {};
  for (const [key, value] of url.searchParams) if (!(key in raw)) raw[key] = value;
  if (thread !== undefined) raw.thread = thread;
  return raw;
}

function unauthorized(): ApiError {
  return new ApiError(
    401,
    "UNAUTHORIZED",
    "the explorer needs the API token (OUTLINE_API_TOKEN): send it once as 'Authorization: Bearer <token>' to /ui/api/session, or enter it on the page",
  );
}

/**
 * The web explorer (SPEC §8): a page at /ui/ (the thread list) and /ui/threads/{thread} (one
 * thread), and the JSON it reads under /ui/api/. Read-only, GET only, under the API's token.
 */
export function createExplorer(options: ExplorerOptions): Explorer {
  const { nc, names, reader, operations, settings } = options;
  const session = explorerSession(options.token);
  const actors = actorStates(nc, names);
  const live = liveThreads(nc, names, actors);
  const lister = threadLister(nc, names, reader);
  const views = threadViews(reader, operations, settings);
  let built: Promise<ExplorerAssets> | undefined;
  const assets = () =>
    (built ??= (options.assets ?? (() => bundleExplorer()))().catch((err: unknown) => {
      built = undefined;
      throw new ApiError(
        500,
        "UI_BUILD_FAILED",
        `the explorer's page could not be built from services/explorer/ui/: ${(err as Error).message}`,
      );
    }));

  async function threadRoute(
    res: ServerResponse,
    url: URL,
    thread: string,
    op: string | undefined,
  ): Promise<void> {
    const raw = queryOf(url, thread);
    switch (op) {
      case undefined:
        return json(res, await views.thread(thread));
      case "tail":
        return json(
          res,
          await views.tail(
            thread,
            offsetArg(raw),
            limitArg(raw, TAIL_PAGE, MAX_TAIL_PAGE, "messages"),
          ),
        );
      case "prompt":
        return json(res, await operations.prompt(raw));
      case "zoom":
        return json(res, await operations.zoom(raw));
      case "actor": {
        const found = (await actors.states([thread], { transitions: true })).get(thread);
        const body: ActorBody = found ? { live: true, actor: found } : { live: false };
        return json(res, body);
      }
      case "events": {
        // Before a live slot is taken: a stream for a thread that is not there would hold one
        // (and its watch) until the page goes, and 64 of them shut every page out.
        const [stored, lastSeq] = await Promise.all([
          reader.storedSnapshot(thread),
          reader.lastMessageSeq(thread),
        ]);
        if (!stored && lastSeq === 0) throw notFound(thread);
        return live.stream(thread, res);
      }
      case "search":
        if (options.search) return json(res, await options.search(raw));
        break;
    }
    throw new ApiError(404, "NO_SUCH_ROUTE", `no explorer route ${url.pathname.slice(0, 160)}`);
  }

  async function api(req: IncomingMessage, res: ServerResponse, url: URL, parts: string[]) {
    if (parts[0] === "session") {
      if (!session.allows(req)) throw unauthorized();
      const cookie = session.cookie(req);
      res.writeHead(204, {
        ...HEADERS,
        "cache-control": "no-store",
        ...(cookie ? { "set-cookie": cookie } : {}),
      });
      res.end();
      return;
    }
    if (!session.allows(req)) throw unauthorized();
    if (parts[0] === "config" && parts.length === 1) {
      const body: ExplorerConfig = {
        settings: { line: settings.line, tail: settings.tail, outline: settings.outline },
        search: options.search !== undefined,
      };
      return json(res, body);
    }
    if (parts[0] === "actors" && parts.length === 1) {
      const threads = (url.searchParams.get("threads") ?? "").split(",").filter((t) => t !== "");
      const found = await actors.states(threads.map((t) => threadArg({ thread: t })));
      const body: ActorStatesBody = { actors: Object.fromEntries(found) };
      return json(res, body);
    }
    if (parts[0] === "threads" && parts.length === 1) {
      const filter = (url.searchParams.get("filter") ?? "").trim();
      if (filter.length > 128) {
        throw new ApiError(
          400,
          "BAD_FILTER",
          "filter is part of a thread id: at most 128 characters",
        );
      }
      const raw = queryOf(url);
      return json(
        res,
        await lister.list({
          filter,
          before: beforeArg(raw, "the last page's next (a bucket sequence)"),
          limit: limitArg(raw, 50, 200, "threads"),
        }),
      );
    }
    if (parts[0] === "threads" && (parts.length === 2 || parts.length === 3)) {
      let thread: string;
      try {
        thread = threadArg({ thread: decodeURIComponent(parts[1] ?? "") });
      } catch (err) {
        if (err instanceof URIError)
          throw new ApiError(400, "BAD_THREAD_ID", "the thread id is not valid percent-encoding");
        throw err;
      }
      return threadRoute(res, url, thread, parts[2]);
    }
    throw new ApiError(404, "NO_SUCH_ROUTE", `no explorer route ${url.pathname.slice(0, 160)}`);
  }

  return {
    serves: (target) =>
      target === "/" ||
      target.startsWith("/?") ||
      target === "/ui" ||
      target.startsWith("/ui/") ||
      target.startsWith("/ui?"),

    async handle(req, res) {
      const url = new URL(req.url ?? "/", "http://outline.invalid");
      // The server's own address opens the explorer. No token asked: the page is served to
      // anyone (it asks for the token itself), so the way to it gives nothing away.
      if (url.pathname === "/") return redirect(res, 302, `/ui/${url.search}`);
      if (url.pathname === "/ui") return redirect(res, 308, `/ui/${url.search}`);
      const parts = url.pathname.slice("/ui/".length).split("/");
      if (parts[0] === "api") return api(req, res, url, parts.slice(1));
      if (parts[0] === "assets" && parts.length === 2) {
        const { files, version } = await assets();
        const asset = files.get(parts[1] ?? "");
        if (!asset)
          throw new ApiError(
            404,
            "NO_SUCH_ASSET",
            `no explorer file ${url.pathname.slice(0, 160)}`,
          );
        // A versioned URL never changes: cached for good; without the version, revalidated.
        const cache =
          url.searchParams.get("v") === version
            ? "public, max-age=31536000, immutable"
            : "no-cache";
        return send(res, 200, asset.body, asset.type, { "cache-control": cache });
      }
      // The page itself, for the list and for any thread: it routes in the browser.
      if (url.pathname === "/ui/" || (parts[0] === "threads" && parts.length === 2)) {
        const { version } = await assets();
        return send(res, 200, shell(version), "text/html; charset=utf-8");
      }
      throw new ApiError(
        404,
        "NO_SUCH_ROUTE",
        `no explorer page ${url.pathname.slice(0, 160)}; the list is at /ui/, a thread at /ui/threads/{thread}`,
      );
    },

    close() {
      live.close();
      actors.close();
    },
  };
}
