import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { ApiError, errorBody } from "../api/api-error.ts";
import type { Operations } from "../api/operations-interface.ts";
import type { RawRequest } from "../api/requests.ts";
import type { SearchForward } from "./search-forward.ts";
import { SEARCH_TOOL, ZOOM_TOOL, type ToolDefinition } from "../api/tools.ts";

/** The operations an MCP tool or resource reads: the API's own, by its operation names. */
export type McpOp = "prompt" | "zoom" | "outline" | "search";

/**
 * Where an MCP server's answers come from: the prompt-builder in this process (HTTP), or the
 * running one asked over NATS (`outline mcp`, stdio). Either way the text is the API's JSON and a
 * failure the ApiError the API answered with.
 */
export interface McpBackend {
  /** The API's answer to `op` as JSON text. */
  ask(op: McpOp, raw: RawRequest): Promise<string>;
  /** Whether the service that answers serves search (HISTORY_SEARCH=on): `search` is listed. */
  searchOn(thread: string): Promise<boolean>;
}

/** The in-process backend: the prompt-builder's operations and its search route. */
export function operationsBackend(
  operations: Operations,
  search: SearchForward,
  searchOn: boolean,
): McpBackend {
  const decoder = new TextDecoder();
  return {
    async ask(op, raw) {
      if (op === "prompt") return (await operations.promptBody(raw)).toString("utf8");
      if (op === "search") return decoder.decode(await search(raw));
      return JSON.stringify(await operations[op](raw));
    },
    searchOn: () => Promise.resolve(searchOn),
  };
}

/**
 * `outline` as a tool: MCP clients have no GET /outline. Not in GET /tools, which SPEC §8 fixes
 * to zoom and search (the prompt already holds the outline a platform's agent needs).
 */
export const OUTLINE_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "outline",
    description: [
      "The summarized earlier conversation as stored: { thread, count, boundary, since, cutAt, complete, bytes, seq, lines: [{ id, n, level, text, bytes, until }], tail: [message ids] }.",
      "Each line id+n covers the n messages from message id on, oldest first; zoom(id, n) opens it.",
      "Messages from boundary to count - 1 are not summarized: they are whole (the tail).",
    ].join(" "),
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
};

/** Every tool this server can run; `search` is listed only when on, but answers either way. */
const TOOLS: readonly ToolDefinition[] = [ZOOM_TOOL, SEARCH_TOOL, OUTLINE_TOOL];

/** An OpenAI function definition as an MCP tool: the same name, description and JSON Schema. */
const mcpTool = (t: ToolDefinition): Tool => ({
  name: t.function.name,
  description: t.function.description,
  inputSchema: t.function.parameters as Tool["inputSchema"],
});

const PROMPT_ARGS = ["agent", "format", "from"] as const;

/** The prompt's URI for `thread`, with the query arguments GET /prompt takes. */
export const promptUri = (thread: string) => `outline://threads/${thread}/prompt`;

function toolError(err: ApiError): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify(errorBody(err)) }] };
}

function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(500, "INTERNAL", `the tool failed: ${(err as Error).message}`);
}

/**
 * An MCP server for one thread (SPEC §8 "MCP"). The thread is fixed here, by the URL or the
 * command line: no tool takes a thread, and an argument named so is refused, so an agent cannot
 * reach another thread. The tools are the OpenAI definitions GET /tools serves (one source); a
 * tool's failure is a tool result with `isError` carrying the API's `{ error: { code, message } }`.
 *
 * The prompt is a resource, not an MCP prompt: an MCP prompt is a template a user picks, whose
 * messages are user/assistant text only, while ours is the thread's state in the API's JSON
 * (OpenAI or Anthropic format, cache marks, stats): read as a resource it is byte for byte
 * GET /threads/{thread}/prompt.
 */
export function createMcpServer(backend: McpBackend, thread: string): McpServer {
  const mcp = new McpServer(
    { name: "outline", version: "1.0.0" },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: `The summarized history of thread '${thread}'. Read the resource ${promptUri(thread)} for the prompt (the outline, then the newest messages whole); zoom opens an outline line, or reads a message whole; search (when offered) finds messages by their words; outline gives the outline as stored.`,
    },
  );
  // The low-level handlers: the tools' JSON Schemas are the API's, and their arguments are
  // checked by the API itself so that a bad one is answered with the API's message.
  const server = mcp.server;
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const on = await backend.searchOn(thread);
    return { tools: TOOLS.filter((t) => on || t !== SEARCH_TOOL).map(mcpTool) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const tool = TOOLS.find((t) => t.function.name === name);
    if (!tool) {
      return toolError(
        new ApiError(
          404,
          "NO_SUCH_TOOL",
          `there is no tool '${name}'; the tools are ${TOOLS.map((t) => t.function.name).join(", ")}`,
        ),
      );
    }
    const params = Object.keys(
      (tool.function.parameters as { properties: Record<string, unknown> }).properties,
    );
    const extra = Object.keys(args).filter((key) => !params.includes(key));
    if (extra.length > 0) {
      return toolError(
        new ApiError(
          400,
          "BAD_ARGUMENT",
          `${name} takes ${params.length > 0 ? params.join(", ") : "no arguments"}; ${extra.map((k) => `'${k}'`).join(", ")} ${extra.length === 1 ? "is" : "are"} not one of them (this server serves thread '${thread}' only)`,
        ),
      );
    }
    try {
      const text = await backend.ask(name as McpOp, { ...args, thread });
      return { content: [{ type: "text", text }] };
    } catch (err) {
      return toolError(asApiError(err));
    }
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      {
        uri: promptUri(thread),
        name: "prompt",
        title: `The prompt of thread '${thread}'`,
        description:
          "What an agent is sent: the outline message, then the newest messages whole (GET /threads/{thread}/prompt, OpenAI format, every message as a user's).",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: `${promptUri(thread)}{?agent,format,from}`,
        name: "prompt for an agent",
        description:
          "The prompt as agent `agent` is sent it (its messages as assistant), in format openai or anthropic (content blocks with cache marks), leaving out what is older than `from` (ISO-8601).",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    const raw = promptRequest(uri, thread);
    try {
      const text = await backend.ask("prompt", raw);
      return { contents: [{ uri, mimeType: "application/json", text }] };
    } catch (err) {
      const e = asApiError(err);
      throw new McpError(
        e.status === 400 || e.status === 404 ? ErrorCode.InvalidParams : ErrorCode.InternalError,
        `${e.message} [${e.code}]`,
        errorBody(e),
      );
    }
  });
  return mcp;
}

/** The GET /prompt arguments a resource URI names; any other URI is refused. */
function promptRequest(uri: string, thread: string): RawRequest {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new McpError(ErrorCode.InvalidParams, `'${uri.slice(0, 200)}' is not a URI`);
  }
  const base = promptUri(thread);
  if (`${url.protocol}//${url.host}${url.pathname}` !== base) {
    throw new McpError(
      ErrorCode.InvalidParams,
      `no resource ${uri.slice(0, 200)}: this server serves ${base} (with ?agent=…&format=…&from=…) only`,
    );
  }
  const raw: Record<string, unknown> = {};
  for (const [key, value] of url.searchParams) {
    if (!(PROMPT_ARGS as readonly string[]).includes(key)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `the prompt takes ${PROMPT_ARGS.join(", ")}; '${key}' is not one of them`,
      );
    }
    if (!(key in raw)) raw[key] = value;
  }
  raw.thread = thread;
  return raw;
}
