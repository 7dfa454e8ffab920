/**
 * A transcript of the SDK's own MCP client against a running `npm start`, over both transports:
 * `npx tsx test/support/mcp-transcript.ts http://127.0.0.1:8080 THREAD "a fact's words"`
 * (OUTLINE_API_TOKEN is sent when set; stdio runs `outline mcp THREAD` in this folder, which
 * finds the nats-server as every command does). Lists the tools, zooms from the first line
 * with n > 1 down to a message, searches, and makes a bad call; prints each call and its answer
 * (long texts cut short).
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

const [base, thread, query] = process.argv.slice(2);
if (!base || !thread || !query) {
  console.error("usage: npx tsx test/support/mcp-transcript.ts BASE_URL THREAD QUERY");
  process.exit(2);
}
const token = process.env.OUTLINE_API_TOKEN;
const cut = (text: string, max = 300) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;

async function call(client: Client, name: string, args: Record<string, unknown>) {
  console.log(`→ tools/call ${name} ${JSON.stringify(args)}`);
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const first = result.content[0];
  const text = first?.type === "text" ? first.text : JSON.stringify(result.content);
  console.log(`← ${result.isError ? "isError: true " : ""}${cut(text)}`);
  return JSON.parse(text) as unknown;
}

async function transcript(label: string, transport: Transport): Promise<void> {
  console.log(`\n== ${label}`);
  const client = new Client({ name: "mcp-transcript", version: "1.0.0" });
  await client.connect(transport);
  const info = client.getServerVersion();
  console.log(`connected: ${info?.name} ${info?.version}`);
  console.log("→ tools/list");
  const { tools } = await client.listTools();
  for (const t of tools) {
    console.log(
      `← ${t.name} (${Object.keys(t.inputSchema.properties ?? {}).join(", ")}): ${cut(t.description ?? "", 90)}`,
    );
  }
  const outline = (await call(client, "outline", {})) as { lines: { id: number; n: number }[] };
  let line = outline.lines.find((l) => l.n > 1) ?? outline.lines[0];
  while (line && line.n > 1) {
    const opened = (await call(client, "zoom", { id: line.id, n: line.n })) as {
      lines: { id: number; n: number }[];
    };
    line = opened.lines[0];
  }
  if (line) await call(client, "zoom", { id: line.id, n: 1 });
  const found = (await call(client, "search", { q: query })) as { hits?: { id: number }[] };
  const hit = found.hits?.[0];
  if (hit) await call(client, "zoom", { id: hit.id, n: 1 });
  await call(client, "zoom", { id: 3, n: 2 });
  await call(client, "zoom", { id: 0, n: 1, thread: "another-thread" });
  const { resources } = await client.listResources();
  console.log(`→ resources/list\n← ${resources.map((r) => r.uri).join(", ")}`);
  const read = await client.readResource({ uri: `${resources[0]?.uri ?? ""}?agent=north` });
  const text = read.contents[0] && "text" in read.contents[0] ? read.contents[0].text : "";
  console.log(`→ resources/read ${resources[0]?.uri}?agent=north\n← ${cut(String(text), 200)}`);
  await client.close();
}

await transcript(
  `Streamable HTTP: POST ${base}/threads/${thread}/mcp`,
  new StreamableHTTPClientTransport(new URL(`${base}/threads/${thread}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  }),
);
const env: Record<string, string> = {};
for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
await transcript(
  `stdio: outline mcp ${thread}`,
  new StdioClientTransport({
    command: process.execPath,
    args: [join(process.cwd(), "services/cli/bin.js"), "mcp", thread],
    env,
  }),
);
