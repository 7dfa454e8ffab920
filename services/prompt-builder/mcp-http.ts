import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ApiError } from "../api/api-error.ts";
import { createMcpServer, type McpBackend } from "./mcp.ts";
import { threadArg } from "../api/requests.ts";

/** JSON-RPC messages are a few arguments; a tool call never comes near this. */
const MAX_MCP_BODY = 1024 * 1024;

const MCP_PATH = /^\/threads\/([^/?#]*)\/mcp(?:[?#].*)?$/;

/** The MCP endpoint of the prompt-builder's HTTP server: POST /threads/{thread}/mcp. */
export interface McpHttp {
  /** Whether a request target is the MCP endpoint (its body must then not be drained). */
  serves(target: string): boolean;
  /** Answers one request to the endpoint; an ApiError it throws is sent as the API's JSON. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_MCP_BODY) {
      throw new ApiError(
        413,
        "BODY_TOO_LARGE",
        `an MCP message is at most ${MAX_MCP_BODY} bytes; this one is larger`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function threadOf(target: string): string {
  const match = MCP_PATH.exec(target);
  let thread: string;
  try {
    thread = decodeURIComponent(match?.[1] ?? "");
  } catch {
    thread = match?.[1] ?? "";
  }
  return threadArg({ thread });
}

/**
 * Streamable HTTP without sessions: each POST gets a server of its own, bound to the URL's
 * thread, so any instance answers any request and nothing is held between them. Answers are
 * plain JSON (no event stream): every tool answers at once.
 */
export function createMcpHttp(backend: McpBackend): McpHttp {
  return {
    serves: (target) => MCP_PATH.test(target),
    async handle(req, res) {
      const thread = threadOf(req.url ?? "");
      if (req.method !== "POST") {
        // Without sessions there is no stream to open (GET) or session to end (DELETE).
        res.setHeader("allow", "POST");
        throw new ApiError(
          405,
          "METHOD_NOT_ALLOWED",
          `${req.method} is not served on /threads/{thread}/mcp: send MCP messages as POST (Streamable HTTP, no sessions)`,
        );
      }
      const text = await readBody(req);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        const reply = JSON.stringify({
          jsonrpc: "2.0",
          id: null,
          error: { code: -32700, message: `Parse error: ${(err as Error).message}` },
        });
        res.writeHead(400, { "content-type": "application/json" }).end(reply);
        return;
      }
      const server = createMcpServer(backend, thread);
      const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
      res.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    },
  };
}
