/**
 * The components' schemas of GET /openapi.json (openapi.ts): the JSON of shared/api.ts's answers,
 * which test/openapi.int.test.ts checks real answers against.
 */

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

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

export const schemas = {
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
      workers: {
        type: "array",
        description:
          "Single mode: the workers heard on the stream, from their heartbeats (more than one only beside a peer allowed by OUTLINE_ALLOW_SINGLE_PEERS).",
        items: {
          type: "object",
          required: ["id", "host", "pid", "since", "live", "heardMsAgo"],
          properties: {
            id: { type: "string" },
            host: { type: "string" },
            pid: { type: "integer" },
            since: { type: "string" },
            live: { type: "boolean" },
            heardMsAgo: { type: "integer" },
          },
        },
      },
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
      worker: {
        type: "object",
        description:
          "Under npm start only: this instance's thread worker. `joined` once it reads its share of the partitions (single mode: once it consumes); until then the instance is not healthy.",
        required: ["joined", "state"],
        properties: { joined: { type: "boolean" }, state: { type: "string" } },
      },
    },
  },
};
