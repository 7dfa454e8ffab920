import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { answerError } from "../client/client.ts";
import { natsTransport } from "../client/nats.ts";
import type { Operation } from "../client/transport.ts";
import { ApiError } from "../api/api-error.ts";
import { createMcpServer, type McpBackend } from "../prompt-builder/mcp.ts";
import { threadArg } from "../api/requests.ts";
import { forwardSearch } from "../prompt-builder/search-forward.ts";
import type { ToolDefinition } from "../api/tools.ts";
import { parse, UsageError } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline mcp <thread>

Serves one thread's tools (zoom, outline, and search when the service has HISTORY_SEARCH=on) and
its prompt (a resource) over MCP on stdin and stdout, for desktop MCP clients. It asks the
running prompt-builder over NATS (npm start), so answers are built with its settings; the thread
is fixed by the argument: no tool can reach another. Nothing but MCP is written to stdout.
Over HTTP the same server is POST /threads/{thread}/mcp on the prompt-builder (docs/mcp.md).`;

export const mcp: Command = {
  name: "mcp",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(argv, {}, 1);
    if (args.help) return out.help(USAGE);
    let thread: string;
    try {
      thread = threadArg({ thread: args.positionals[0] });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    return withSession(async ({ nc, config }) => {
      const prefix = config.names.apiPrefix;
      const decoder = new TextDecoder();
      // The client's transport gives the API's JSON text as it came; search goes through the
      // prompt-builder's forward, which says SEARCH_OFF by this shell's HISTORY_SEARCH.
      const api = natsTransport({ nats: nc, apiPrefix: prefix });
      const asked = async (op: Operation, raw: Readonly<Record<string, unknown>>) => {
        const answer = await api(op, raw);
        if (answer.status !== 200) throw answerError(op, answer);
        return answer.body;
      };
      const search = forwardSearch(nc, prefix, { on: config.settings.search });
      const backend: McpBackend = {
        async ask(op, raw) {
          return op === "search" ? decoder.decode(await search(raw)) : asked(op, raw);
        },
        async searchOn(t) {
          try {
            const tools = JSON.parse(await asked("tools", { thread: t })) as ToolDefinition[];
            return tools.some((tool) => tool.function.name === "search");
          } catch (err) {
            // A thread without messages yet has no tools answer: this shell's setting says.
            if (err instanceof ApiError && err.code === "THREAD_NOT_FOUND")
              return config.settings.search;
            throw err;
          }
        },
      };
      // Fails at once, on stderr, when no prompt-builder answers: a client would see only tool
      // errors later.
      await backend.searchOn(thread);
      const server = createMcpServer(backend, thread);
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => {
        process.stdin.once("end", resolve);
        process.stdin.once("close", resolve);
        transport.onclose = resolve;
      });
      await server.connect(transport);
      process.stderr.write(`outline mcp: serving thread '${thread}' over stdio\n`);
      await closed;
      await server.close();
      return 0;
    });
  },
};
