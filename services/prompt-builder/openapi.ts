import { THREAD_ID } from "../../shared/events.ts";
import { SEARCH_TOOL, ZOOM_TOOL } from "../api/tools.ts";
import { ref, schemas } from "./openapi-schemas.ts";

/**
 * GET /openapi.json: the HTTP API (SPEC §8) as OpenAPI 3.1. The answers' schemas, in
 * openapi-schemas.ts, are the JSON of shared/api.ts; test/openapi.int.test.ts validates the
 * document and checks every route the server serves against it, and real answers against its
 * schemas.
 */

const json = (schema: object, description: string, headers?: object) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema } },
});
const error = (description: string, headers?: object) => json(ref("Error"), description, headers);
const retryAfter = {
  "Retry-After": {
    description: "Seconds after which asking again may succeed (the typed client waits them).",
    schema: { type: "integer", minimum: 0 },
  },
};
const toolParameter = (tool: typeof ZOOM_TOOL, name: string, required = false) => {
  const properties = tool.function.parameters.properties as Record<string, { description: string }>;
  const schema = properties[name] as { description: string };
  return { name, in: "query", required, description: schema.description, schema };
};

const threadParameter = {
  name: "thread",
  in: "path",
  required: true,
  description: "The thread id: 1–128 characters of A-Z, a-z, 0-9, '_' or '-'.",
  schema: { type: "string", pattern: THREAD_ID.source },
};

/** The answers every thread route may give besides its own. */
const common = {
  "400": error(
    "BAD_THREAD_ID (the path's thread id), BAD_URL, or a bad argument: the code names the rule broken (MISSING_ARGUMENT, NOT_A_NUMBER, BAD_ARGUMENT, …).",
  ),
  "401": error("UNAUTHORIZED: OUTLINE_API_TOKEN is set and the bearer token is missing or wrong.", {
    "WWW-Authenticate": { schema: { type: "string" } },
  }),
  "403": error(
    "FORBIDDEN_HOST: OUTLINE_API_TOKEN is not set and the Host header names no loopback host (a guard against DNS rebinding).",
  ),
  "404": error("THREAD_NOT_FOUND: no outline and no messages for the thread."),
  "405": error("METHOD_NOT_ALLOWED: every route is GET (or HEAD).", {
    Allow: { schema: { type: "string" } },
  }),
  "413": error("BODY_TOO_LARGE: a request body; the arguments go in the query string."),
  "414": error("URI_TOO_LONG: a request target over 8,192 characters."),
  "500": error("INTERNAL: anything else; the prompt-builder's log has the stack."),
};

const stateMissing = error(
  "STATE_MISSING (Retry-After: 1): the snapshot names state not in NATS yet; SNAPSHOT_BEHIND (Retry-After: 5): the worker is behind or stopped.",
  retryAfter,
);

const threadRoute = (
  operationId: string,
  summary: string,
  parameters: object[],
  ok: object,
  more: Record<string, object> = {},
) => ({
  get: {
    operationId,
    summary,
    parameters: [threadParameter, ...parameters],
    responses: { "200": ok, ...common, ...more },
  },
});

/** The document: the same for every server, so it is built once. */
export const OPENAPI = {
  openapi: "3.1.0",
  info: {
    title: "outline prompt-builder",
    version: "1",
    description:
      "Summarized history for endless chat threads (SPEC §8). The same operations answer over NATS request/reply on <OUTLINE_API_PREFIX>.<op> (docs/infrastructure.md). MCP is served on POST /threads/{thread}/mcp (docs/mcp.md). When OUTLINE_API_TOKEN is set every route but /healthz and /openapi.json needs 'Authorization: Bearer <token>'. The explorer under /ui/ is a web page and not described here. Fields may be added to answers, none renamed.",
  },
  components: {
    securitySchemes: {
      bearer: {
        type: "http",
        scheme: "bearer",
        description: "OUTLINE_API_TOKEN; not required on a loopback HOST without one.",
      },
    },
    schemas,
  },
  security: [{ bearer: [] }],
  paths: {
    "/threads/{thread}/prompt": threadRoute(
      "prompt",
      "The prompt for an agent: the outline message, then the whole messages",
      [
        {
          name: "agent",
          in: "query",
          description:
            "Whose messages are 'assistant'; others are 'user', prefixed with the author.",
          schema: { type: "string", maxLength: 256 },
        },
        {
          name: "from",
          in: "query",
          description: "Leave out lines and messages older than this time (BAD_FROM otherwise).",
          schema: { type: "string", format: "date-time" },
        },
        {
          name: "format",
          in: "query",
          description: "openai (default) or anthropic (content blocks with cache marks).",
          schema: { enum: ["openai", "anthropic"], default: "openai" },
        },
      ],
      json(ref("PromptReply"), "The prompt."),
      { "503": stateMissing },
    ),
    "/threads/{thread}/zoom": threadRoute(
      "zoom",
      "Open outline line id+n into its two halves, or read message id whole (n=1)",
      [
        toolParameter(ZOOM_TOOL, "id", true),
        toolParameter(ZOOM_TOOL, "n", true),
        toolParameter(ZOOM_TOOL, "offset"),
        toolParameter(ZOOM_TOOL, "limit"),
      ],
      json(ref("ZoomReply"), "The two lines, or the message (a page of it)."),
      {
        "400": error(
          "A rule broken: MISSING_ARGUMENT, NOT_A_NUMBER, N_NOT_POWER_OF_TWO, BAD_ID, NO_SUCH_LINE, ID_PAST_OUTLINE, ID_PAST_END, PAGE_ON_LINE, BAD_PAGE, BAD_THREAD_ID.",
        ),
        "502": error("LEAF_WITHOUT_SOURCE: a HISTORY leaf does not name its message; replay."),
        "503": stateMissing,
      },
    ),
    "/threads/{thread}/outline": threadRoute(
      "outline",
      "The thread's outline snapshot",
      [],
      json(ref("OutlineSnapshot"), "The snapshot (all tail when the worker wrote none yet)."),
      { "503": stateMissing },
    ),
    "/threads/{thread}/tools": threadRoute(
      "tools",
      "The tools agents are offered, as OpenAI function tools: zoom, and search when on",
      [],
      json({ type: "array", items: ref("ToolDefinition") }, "The tool definitions."),
    ),
    "/threads/{thread}/search": threadRoute(
      "search",
      "Find the thread's original messages containing q, newest first",
      [
        toolParameter(SEARCH_TOOL, "q", true),
        toolParameter(SEARCH_TOOL, "before"),
        toolParameter(SEARCH_TOOL, "limit"),
      ],
      json(ref("SearchReply"), "The hits."),
      {
        "400": error(
          "MISSING_QUERY, BAD_QUERY, QUERY_TOO_LONG, NOT_A_NUMBER, BAD_BEFORE, BAD_LIMIT, BAD_THREAD_ID.",
        ),
        "501": error("SEARCH_OFF: HISTORY_SEARCH is off; the error names the setting."),
        "503": error(
          "SEARCH_UNAVAILABLE (Retry-After: 30): no search service answers yet; SEARCH_INDEX_BEHIND (Retry-After: 5): its index is catching up.",
          retryAfter,
        ),
        "504": error("SEARCH_TIMEOUT: the search service did not answer in time."),
      },
    ),
    "/threads/{thread}/mcp": {
      post: {
        operationId: "mcp",
        summary: "The thread's tools and prompt over MCP (Streamable HTTP, no sessions)",
        description:
          "MCP's Streamable HTTP transport, bound to the path's thread: tools zoom, search (when on) and outline, and the prompt as resource outline://threads/{thread}/prompt; see [docs/mcp.md](docs/mcp.md). Stateless: each POST carries one JSON-RPC message and is answered on its own, by whichever instance receives it, as plain JSON (never text/event-stream, though the client's Accept must list both). A tool's failure is a result with isError, whose text is the API's error body. GET and DELETE (no stream to open, no session to end) answer 405.",
        parameters: [
          threadParameter,
          {
            name: "Mcp-Protocol-Version",
            in: "header",
            description:
              "The MCP version initialize agreed on; one the SDK does not support is a 400.",
            schema: { type: "string" },
          },
        ],
        requestBody: {
          required: true,
          description: "A JSON-RPC message; Content-Type application/json, at most 1 MB.",
          content: { "application/json": { schema: ref("McpMessage") } },
        },
        responses: {
          "200": json(ref("McpMessage"), "The JSON-RPC response to the request."),
          "202": { description: "A notification or response only: accepted, no body." },
          "400": json(
            { oneOf: [ref("Error"), ref("McpMessage")] },
            "BAD_THREAD_ID (the path's thread id, the API's error); or a JSON-RPC error: a body that is not JSON or not a JSON-RPC message (-32700), an unsupported Mcp-Protocol-Version (-32000).",
          ),
          "401": common["401"],
          "403": error(
            "FORBIDDEN_ORIGIN: a browser page of another site (its Origin is neither this server nor a loopback one); FORBIDDEN_HOST as on every route.",
          ),
          "405": error("METHOD_NOT_ALLOWED: only POST is served here (no sessions).", {
            Allow: { schema: { const: "POST" } },
          }),
          "406": json(
            ref("McpMessage"),
            "A JSON-RPC error (-32000): Accept must list both application/json and text/event-stream.",
          ),
          "413": error("BODY_TOO_LARGE: an MCP message over 1 MB."),
          "414": common["414"],
          "415": json(
            ref("McpMessage"),
            "A JSON-RPC error (-32000): Content-Type must be application/json.",
          ),
          "500": common["500"],
        },
      },
    },
    "/cluster": {
      get: {
        operationId: "cluster",
        summary: "Who owns what: members, partitions and leases (docs/scale-out.md)",
        responses: {
          "200": json(ref("ClusterAnswer"), "The cluster."),
          "401": common["401"],
          "403": common["403"],
          "503": error(
            "CLUSTER_UNAVAILABLE (Retry-After: 2): the cluster bucket is electing a leader.",
            retryAfter,
          ),
          "500": common["500"],
        },
      },
    },
    "/healthz": {
      get: {
        operationId: "healthz",
        summary:
          "Whether NATS answers a round trip now and, under npm start, this instance's worker has joined (no token needed)",
        security: [],
        responses: {
          "200": json(ref("HealthReport"), "Healthy."),
          "503": json(
            ref("HealthReport"),
            "NATS does not answer, or this instance's worker has not joined yet (`worker.state` says where it is).",
          ),
        },
      },
    },
    "/metrics": {
      get: {
        operationId: "metrics",
        summary: "Prometheus metrics",
        responses: {
          "200": {
            description: "Prometheus text exposition format.",
            content: { "text/plain": { schema: { type: "string" } } },
          },
          "401": common["401"],
          "403": common["403"],
        },
      },
    },
    "/openapi.json": {
      get: {
        operationId: "openapi",
        summary: "This document (no token needed: it describes the API, no thread's data)",
        security: [],
        responses: { "200": json({ type: "object" }, "OpenAPI 3.1.") },
      },
    },
  },
} as const;
