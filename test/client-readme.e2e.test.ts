// The README's tool loop, run as a consumer of the package runs it: in a folder of its own that
// has `outline` (this repository, as `npm install <folder>` links it) and `openai` in
// node_modules, against `npm start` (compiled, as deployed) and a fake OpenAI-compatible model.
// And a consumer's TypeScript, type-checking against the package's declarations.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROOT } from "../services/build/build.js";
import { namesToEnv } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { freePort } from "../services/util/processes.ts";
import { makeMessage } from "./support/conversation.ts";
import { publishMessages, uniqueNames } from "./support/outline-fixture.ts";
import { ServiceProcess, START_DEADLINE_MS } from "./support/service-process.ts";

const thread = "readme-thread";
const FACT = "the spare key is in locker 4471";

interface Request {
  tools?: { function: { name: string } }[];
  messages: { role: string; content: string | null; tool_call_id?: string }[];
}

/** An OpenAI-compatible endpoint answering each request with the next scripted message. */
async function fakeModel(replies: Record<string, unknown>[]) {
  const requests: Request[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Request);
      const message = replies.shift() ?? { role: "assistant", content: "(no more replies)" };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: "chat.completion",
          created: 1_764_489_600,
          model: "fake",
          choices: [{ index: 0, message, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { cwd, env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

/** The README's example: the one `js` block that imports outline/client. */
function readmeExample(): string {
  const blocks = [...readFileSync(join(ROOT, "README.md"), "utf8").matchAll(/```js\n([^]*?)```/g)];
  const found = blocks.map((b) => b[1] ?? "").filter((b) => b.includes('"outline/client"'));
  expect(found).toHaveLength(1);
  return found[0] as string;
}

let nc: NatsConnection;
let start: ServiceProcess;
let url: string;
let consumer: string;
let data: string;

beforeAll(async () => {
  const names = uniqueNames();
  nc = await connectNats({ url: inject("natsUrl"), name: "client-readme-test" });
  const { js } = await ensureTopology(nc, names);
  await publishMessages(
    js,
    names,
    Array.from({ length: 40 }, (_, i) =>
      makeMessage(thread, i, i === 5 ? FACT : `message ${i} about the move on day ${i}`),
    ),
  );
  const port = await freePort("127.0.0.1");
  url = `http://127.0.0.1:${port}`;
  data = mkdtempSync(join(tmpdir(), "outline-readme-start-"));
  // `npm start` with NATS_URL set: the worker, the prompt-builder and the search service.
  start = new ServiceProcess(
    "services/start/main.ts",
    {
      ...process.env,
      ...namesToEnv(names),
      NATS_URL: inject("natsUrl"),
      HOST: "127.0.0.1",
      PORT: String(port),
      HISTORY_SEARCH: "on",
      HISTORY_SUMMARIZER: "extractive",
      HISTORY_TAIL: "200,400",
      HISTORY_OUTLINE: "2000,4000",
      HISTORY_LINE: "128",
      OUTLINE_CONFIG: "",
      OUTLINE_SEARCH_DB: join(data, "search.db"),
      OPENAI_API_KEY: "",
    },
    { detached: true },
  );
  await start.started("npm start", ["outline is running"], START_DEADLINE_MS);

  consumer = mkdtempSync(join(tmpdir(), "outline-consumer-"));
  mkdirSync(join(consumer, "node_modules"));
  symlinkSync(ROOT, join(consumer, "node_modules", "outline"), "dir");
  symlinkSync(
    join(ROOT, "node_modules", "openai"),
    join(consumer, "node_modules", "openai"),
    "dir",
  );
  writeFileSync(join(consumer, "package.json"), '{ "type": "module", "private": true }\n');
});

afterAll(async () => {
  if (start?.child.pid !== undefined && start.child.exitCode === null) {
    process.kill(-start.child.pid, "SIGTERM");
    await start.exited;
  }
  await nc?.close();
  for (const dir of [consumer, data]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the README's tool loop", () => {
  it("runs against npm start and a model: search, zoom, then the answer", async () => {
    const model = await fakeModel([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_1",
            type: "function",
            function: { name: "search", arguments: '{"q":"spare key"}' },
          },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_2",
            type: "function",
            function: { name: "zoom", arguments: '{"id":5,"n":1}' },
          },
          {
            id: "call_3",
            type: "function",
            function: { name: "zoom", arguments: '{"id":3,"n":3}' },
          },
        ],
      },
      { role: "assistant", content: "The spare key is in locker 4471." },
    ]);
    try {
      writeFileSync(join(consumer, "loop.mjs"), readmeExample());
      // The search service answers once its index has caught up with CHAT: until then a 503
      // the client waits out (Retry-After).
      const r = await run(process.execPath, ["loop.mjs", thread], consumer, {
        ...process.env,
        OUTLINE_URL: url,
        OPENAI_BASE_URL: model.baseURL,
        OPENAI_API_KEY: "fake-key",
      });
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(r.stdout).toBe("The spare key is in locker 4471.\n");

      const [first, second, third] = model.requests;
      expect(first?.tools?.map((t) => t.function.name)).toEqual(["zoom", "search"]);
      expect(first?.messages.at(-1)?.content).toContain("message 39 about the move");
      const searched = JSON.parse(second?.messages.at(-1)?.content ?? "{}") as {
        hits: { id: number }[];
      };
      expect(searched.hits.map((h) => h.id)).toEqual([5]);
      const tool = (id: string) =>
        JSON.parse(third?.messages.find((m) => m.tool_call_id === id)?.content ?? "{}") as {
          message?: { text: string };
          error?: string;
        };
      expect(tool("call_2").message?.text).toBe(FACT);
      // A call breaking a rule gets the API's message, for the model to call again right.
      expect(tool("call_3").error).toMatch(/power of two/);
    } finally {
      await model.close();
    }
  });

  it("type-checks in a consumer's TypeScript against the package's declarations", async () => {
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          strict: true,
          noEmit: true,
          types: [],
          skipLibCheck: true,
        },
        files: ["consumer.ts"],
      }),
    );
    writeFileSync(
      join(consumer, "consumer.ts"),
      `import { ApiError, createClient, type PromptReply, type ZoomReply } from "outline/client";
const client = createClient({ url: "http://127.0.0.1:8080", token: "t" });
export const prompt: Promise<PromptReply> = client.prompt({ thread: "t1", format: "anthropic" });
export const zoom: Promise<ZoomReply> = client.zoom({ thread: "t1", id: 0, n: 4 });
export const code = (err: unknown) => (err instanceof ApiError ? [err.code, err.status] : []);
// @ts-expect-error zoom needs n
void client.zoom({ thread: "t1", id: 0 });
// @ts-expect-error a snapshot's count is a number
export const count: Promise<string> = client.outline({ thread: "t1" }).then((s) => s.count);
`,
    );
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const r = await run(process.execPath, [tsc, "-p", "."], consumer, process.env);
    expect(r.stdout + r.stderr).toBe("");
    expect(r.code).toBe(0);
  });
});
