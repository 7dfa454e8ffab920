import { THREAD_ID } from "../../shared/events.ts";
import { SEARCH_TOOL, ZOOM_TOOL } from "../api/tools.ts";

/**
 * GET /openapi.json: the HTTP API (SPEC §8) as OpenAPI 3.1. The answers' schemas are the JSON
 * of shared/api.ts; test/openapi.int.test.ts validates the document and checks every route the
 * server serves against it, and real answers against its schemas.
 */

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
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

const promptMessage = {
  type: "object",
  required: ["role", "content"],
  properties: {
    role: { enum: ["user", "assistant"] },
    content: {
      description:
        "Text; in the Anthropic format the outline message is text blocks with cache marks.",
      oneOf: [{ type: "string" }, { type: "array", items: ref("AnthropicTextBlock") }],
    },
    state: { description: "The agent's own model state, written after the last cut." },
    steps: { type: "array", description: "Tool steps the message carries." },
  },
};

const schemas = {
  Error: {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message"],
        properties: {
          code: { type: "string", description: "Stable: branch on it." },
          message: { type: "string", description: "What was wrong and what to do." },
        },
      },
    },
  },
  AnthropicTextBlock: {
    type: "object",
    required: ["type", "text"],
    properties: {
      type: { const: "text" },
      text: { type: "string" },
      cache_control: {
        type: "object",
        required: ["type"],
        properties: { type: { const: "ephemeral" } },
      },
    },
  },
  PromptMessage: promptMessage,
  PromptReply: {
    type: "object",
    required: ["messages", "stats"],
    properties: {
      messages: { type: "array", items: ref("PromptMessage") },
      stats: {
        type: "object",
        required: [
          "outlineBytes",
          "tailTokens",
          "lines",
          "pending",
          "newerThanSnapshot",
          "snapshotSeq",
        ],
        properties: {
          outlineBytes: { type: "integer" },
          tailTokens: { type: "integer" },
          lines: { type: "integer" },
          pending: { type: "integer", description: "Whole messages left out by the hard cap." },
          newerThanSnapshot: { type: "integer" },
          snapshotSeq: { type: "integer" },
        },
      },
    },
  },
  ZoomLine: {
    type: "object",
    required: ["id", "n", "text", "until"],
    properties: {
      id: { type: "integer" },
      n: { type: "integer" },
      text: { type: "string" },
      until: { type: "string", format: "date-time" },
    },
  },
  ZoomMessage: {
    type: "object",
    required: ["id", "position", "from", "role", "at", "text"],
    properties: {
      id: { type: "string" },
      position: { type: "integer" },
      from: { type: "string" },
      to: { type: "string" },
      role: { enum: ["user", "assistant", "tool", "system"] },
      at: { type: "string", format: "date-time" },
      text: { type: "string" },
      steps: { type: "array" },
    },
  },
  ZoomReply: {
    oneOf: [
      {
        type: "object",
        required: ["lines"],
        properties: { lines: { type: "array", items: ref("ZoomLine"), maxItems: 2 } },
      },
      {
        type: "object",
        required: ["message", "page"],
        properties: {
          message: ref("ZoomMessage"),
          page: {
            type: "object",
            required: ["offset", "limit", "total", "next"],
            properties: {
              offset: { type: "integer" },
              limit: { type: "integer" },
              total: { type: "integer" },
              next: { type: ["integer", "null"] },
            },
          },
          note: { type: "string" },
        },
      },
    ],
  },
  SnapshotLine: {
    type: "object",
    required: ["id", "n", "level", "text", "bytes", "until"],
    properties: {
      id: { type: "integer" },
      n: { type: "integer" },
      level: { type: "integer" },
      text: { type: "string" },
      bytes: { type: "integer" },
      until: { type: "string", format: "date-time" },
    },
  },
  OutlineSnapshot: {
    type: "object",
    required: [
      "thread",
      "count",
      "boundary",
      "since",
      "cutAt",
      "complete",
      "bytes",
      "seq",
      "lines",
      "tail",
      "tailSeqs",
      "pending",
    ],
    properties: {
      thread: { type: "string" },
      count: { type: "integer" },
      boundary: { type: "integer" },
      since: { type: ["string", "null"] },
      cutAt: { type: ["string", "null"] },
      complete: { type: "boolean" },
      bytes: { type: "integer" },
      seq: { type: "integer", description: "CHAT sequence of the newest event it reflects." },
      lines: { type: "array", items: ref("SnapshotLine") },
      tail: { type: "array", items: { type: "string" }, description: "Ids of the whole messages." },
      tailSeqs: { type: "array", items: { type: "integer" } },
      pending: {
        type: "object",
        required: ["jobs", "cuts", "merging"],
        properties: {
          jobs: { type: "integer" },
          cuts: { type: "integer" },
          merging: { type: "boolean" },
          held: { type: "integer" },
        },
      },
      settings: {
        type: "object",
        required: ["line", "tail", "outline"],
        properties: {
          line: { type: "integer" },
          tail: { type: "array", items: { type: "integer" }, minItems: 2, maxItems: 2 },
          outline: { type: "array", items: { type: "integer" }, minItems: 2, maxItems: 2 },
        },
      },
    },
  },
  ToolDefinition: {
    type: "object",
    required: ["type", "function"],
    properties: {
      type: { const: "function" },
      function: {
        type: "object",
        required: ["name", "description", "parameters"],
        properties: {
          name: { type: "string" },
          description: { type: "string" },
          parameters: { type: "object", description: "A JSON Schema of the arguments." },
        },
      },
    },
  },
  SearchHit: {
    type: "object",
    required: ["id", "message", "in", "at", "from", "snippet"],
    properties: {
      id: { type: "integer", description: "The message's number: zoom(id, 1) reads it." },
      message: { type: "string", description: "Its message id." },
      in: { type: ["string", "null"], description: "The outline line holding it; null: whole." },
      at: { type: "string" },
      from: { type: "string" },
      snippet: { type: "string" },
    },
  },
  SearchReply: {
    type: "object",
    required: ["hits", "before"],
    properties: {
      hits: { type: "array", items: ref("SearchHit") },
      before: { type: ["integer", "null"], description: "For the next page; null: none." },
    },
  },
  ClusterMember: {
    type: "object",
    required: [
      "id",
      "host",
      "pid",
      "since",
      "capacity",
      "partitions",
      "threads",
      "lag",
      "live",
      "heardMsAgo",
    ],
    properties: {
      id: { type: "string" },
      host: { type: "string" },
      pid: { type: "integer" },
      since: { type: "string" },
      capacity: { type: "number" },
      partitions: { type: "array", items: { type: "integer" } },
      threads: { type: "integer" },
      lag: { type: "integer" },
      settings: { type: "string" },
      leaving: { type: "boolean" },
      live: { type: "boolean" },
      heardMsAgo: { type: "number" },
    },
  },
  ClusterAnswer: {
    type: "object",
    required: ["mode", "members", "partitions", "leases"],
    properties: {
      mode: { enum: ["single", "partitioned"] },
      members: { type: "array", items: ref("ClusterMember") },
      partitions: { type: "integer" },
      leases: { type: "object", additionalProperties: { type: "string" } },
    },
  },
  McpMessage: {
    type: "object",
    description:
      "One MCP message: a JSON-RPC 2.0 request or notification (method, params; a request has an id), or a response (result or error, with the request's id; id null on an error about no request).",
    required: ["jsonrpc"],
    properties: {
      jsonrpc: { const: "2.0" },
      id: { type: ["string", "integer", "null"] },
      method: { type: "string" },
      params: { type: "object" },
      result: { type: "object" },
      error: {
        type: "object",
        required: ["code", "message"],
        properties: {
          code: { type: "integer" },
          message: { type: "string" },
          data: {},
        },
      },
    },
  },
  HealthReport: {
    type: "object",
    required: ["ok", "nats"],
    properties: {
      ok: { type: "boolean" },
      nats: {
        type: "object",
        required: ["connected", "server"],
        properties: {
          connected: { type: "boolean" },
          server: { type: "string" },
          rttMs: { type: "number" },
          error: { type: "string" },
        },
      },
    },
  },
};

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
        summary: "Whether NATS answers a round trip now (no token needed)",
        security: [],
        responses: {
          "200": json(ref("HealthReport"), "Healthy."),
          "503": json(ref("HealthReport"), "NATS does not answer."),
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
