import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../services/util/processes.ts";
import { SEARCH_HEADER_LINE } from "../shared/prompt.ts";
import { BuilderProcess } from "./support/builder-process.ts";
import { START_DEADLINE_MS } from "./support/service-process.ts";

// Names of our own, so this file's streams and durable never meet another test's.
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  NATS_URL: process.env.NATS_URL ?? "",
  OUTLINE_CHAT_STREAM: "CT_CHAT",
  OUTLINE_CHAT_PREFIX: "ctchat",
  OUTLINE_HISTORY_STREAM: "CT_HISTORY",
  OUTLINE_HISTORY_PREFIX: "cthistory",
  OUTLINE_DEAD_STREAM: "CT_DEAD",
  OUTLINE_DEAD_SUBJECT: "ct.dead",
  OUTLINE_KV_BUCKET: "ct-outline",
  OUTLINE_API_PREFIX: "ct.api",
  OUTLINE_WORKER_DURABLE: "ct-worker",
  HISTORY_TAIL: "200,400",
  HISTORY_LINE: "128",
  HISTORY_OUTLINE: "2000,4000",
  HISTORY_SUMMARIZER: "extractive",
  // Search is on for the prompt-builder alone (below): chat and demo must show its prompt and
  // tools, not ones built with their own settings.
  HISTORY_SEARCH: "off",
  OPENAI_API_KEY: "",
  OUTLINE_CONFIG: "",
};
const WORKER = "services/thread-worker/main.ts";
const hasWorker = existsSync(WORKER);

const running: { stop(): void }[] = [];

/** A child process whose output is collected, with a wait for text to appear in it. */
function start(args: string[], extra: Record<string, string> = {}) {
  const child: ChildProcessWithoutNullStreams = spawn("npx", ["tsx", ...args], {
    env: { ...env, ...extra },
    detached: true,
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  let out = "";
  let stopped = false;
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const started = {
    child,
    exited,
    output: () => out,
    async waitFor(test: (out: string) => boolean, what: string, ms = 60_000) {
      const deadline = Date.now() + ms;
      while (!test(out)) {
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${what}; output:\n${out.slice(-3000)}`);
        if (child.exitCode !== null)
          throw new Error(`process exited (${child.exitCode}) before ${what}:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop() {
      // The process group: npx, tsx and node; once is enough (a stopped one exits by signal).
      if (child.pid === undefined || child.exitCode !== null || stopped) return;
      stopped = true;
      process.kill(-child.pid, "SIGTERM");
    },
  };
  running.push(started);
  return started;
}

/** An OpenAI-compatible endpoint answering each request with the next scripted message. */
async function fakeModel(replies: Record<string, unknown>[]) {
  const requests: { tools?: { function: { name: string } }[]; messages: { content: string }[] }[] =
    [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as (typeof requests)[number];
      requests.push(body);
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

let worker: ReturnType<typeof start> | undefined;
let builder: BuilderProcess | undefined;
let chat: ReturnType<typeof start> | undefined;

describe.skipIf(!hasWorker)(
  "npm run chat and npm run demo against a running worker and prompt-builder",
  () => {
    beforeAll(async () => {
      worker = start([WORKER]);
      await worker.waitFor((o) => o.includes("consuming CT_CHAT"), "the worker to start");
      builder = new BuilderProcess({ ...env, HISTORY_SEARCH: "on" }, await freePort("127.0.0.1"));
      await builder.started("prompt-builder", ["HTTP on"], START_DEADLINE_MS);
      chat = start(["services/chat/main.ts", "--thread", "ct-thread"]);
      await chat.waitFor((o) => o.includes("chat in thread ct-thread"), "the chat to start");
    });

    afterAll(async () => {
      // Every process started here, those of a test that failed before stopping its own too.
      for (const p of running) p.stop();
      builder?.kill("SIGTERM");
      await builder?.exited;
    });

    it("chat and demo without a prompt-builder say in one line whom they asked", async () => {
      const none = { OUTLINE_API_PREFIX: "ct.none" };
      for (const [name, args] of [
        ["chat", ["services/chat/main.ts", "--thread", "ct-none"]],
        ["demo", ["services/demo/main.ts", "--thread", "ct-none", "--messages", "10"]],
      ] as const) {
        const p = start([...args], none);
        try {
          expect(await p.exited, p.output()).toBe(1);
          const lines = p.output().trim().split("\n");
          expect(lines, p.output()).toHaveLength(1);
          expect(lines[0]).toMatch(
            new RegExp(`^${name}: no prompt-builder answers on ct\\.none\\.tools: .*'npm start'`),
          );
        } finally {
          p.stop();
        }
      }
    });

    it("the echo agent answers each message with what its prompt ends with", async () => {
      const c = chat as NonNullable<typeof chat>;
      c.child.stdin.write("hello, I am Ana and my order is 4411\n");
      await c.waitFor(
        (o) => o.includes("agent: You said: Ana: hello, I am Ana and my order is 4411"),
        "the echo",
      );
    });

    it("/prompt shows the outline message and the cache mark once the thread was cut", async () => {
      const c = chat as NonNullable<typeof chat>;
      for (let i = 1; i <= 12; i++) {
        c.child.stdin.write(
          `message ${i}: the blue invoice for order 44${i} ships to Lisbon on day ${i} of the month\n`,
        );
      }
      await c.waitFor((o) => o.includes("agent: You said: Ana: message 12:"), "12 answers");
      const deadline = Date.now() + 60_000;
      let shown = "";
      while (Date.now() < deadline) {
        const mark = c.output().length;
        c.child.stdin.write("/prompt\n");
        await c.waitFor((o) => o.slice(mark).includes("prompt: "), "the /prompt output");
        await new Promise((r) => setTimeout(r, 300));
        shown = c.output().slice(mark);
        if (shown.includes("cache ends here")) break;
      }
      expect(shown).toMatch(/prompt: \d+ messages, outline [1-9]\d* lines \/ \d+ bytes/);
      expect(shown).toMatch(/\[0\] user: Earlier in this conversation, summarized, oldest first\./);
      expect(shown).toContain("──── cache ends here (end of the outline message) ────");
      // The newest messages stay whole after the mark.
      expect(shown).toMatch(/\] user: Ana: message 12: the blue invoice/);
      // The prompt-builder's tools (its HISTORY_SEARCH=on), not the chat's own (off).
      expect(shown).toContain("tools: zoom, search");

      const mark = c.output().length;
      c.child.stdin.write("/stats\n/outline\n/zoom 0 1\n");
      await c.waitFor((o) => o.slice(mark).includes("message 0 ("), "stats, outline and zoom");
      const after = c.output().slice(mark);
      expect(after).toMatch(
        /stats: tail ~\d+ tokens, outline [1-9]\d* bytes, model calls 0, zoom calls 0\n {2}since this chat started: [1-9]\d* cuts? seen, \d+ merges?\n {2}the thread's whole life: [1-9]\d* messages cut, \d+ merges?\n/,
      );
      expect(after).toMatch(
        /outline: [1-9]\d* lines, \d+ bytes, boundary [1-9]\d* of (\d+) messages: snapshot at message \1(, the newest|; \d+ newer not in it yet|; messages newer than it)/,
      );
      expect(after).toContain("hello, I am Ana and my order is 4411");
    });

    it("a model is sent the prompt-builder's prompt and tools, and its search call is forwarded", async () => {
      const model = await fakeModel([
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call-1",
              type: "function",
              function: { name: "search", arguments: JSON.stringify({ q: "invoice" }) },
            },
          ],
        },
        { role: "assistant", content: "the invoice ships to Lisbon" },
      ]);
      const c = start(["services/chat/main.ts", "--thread", "ct-thread", "--as", "Bruno"], {
        OPENAI_API_KEY: "test-key",
        OPENAI_BASE_URL: model.baseURL,
        OPENAI_CHAT_MODEL: "fake",
      });
      try {
        await c.waitFor((o) => o.includes("is openai/fake"), "the chat with a model to start");
        c.child.stdin.write("where does the invoice ship?\n");
        await c.waitFor((o) => o.includes("agent: the invoice ships to Lisbon"), "the answer");
        const [first, second] = model.requests;
        expect(first?.tools?.map((t) => t.function.name)).toEqual(["zoom", "search"]);
        // The thread was cut by the test before: its outline message names search(q).
        expect(first?.messages[1]?.content).toContain(SEARCH_HEADER_LINE);
        // No search service runs: the call reached its subject and the model reads why it failed.
        expect(second?.messages.at(-1)?.content).toContain(
          "no search service answers on ct.api.search",
        );
      } finally {
        c.stop();
        await model.close();
      }
    });

    it("the demo shows the prompt the prompt-builder serves and the tools it offers", async () => {
      const d = start([
        "services/demo/main.ts",
        "--thread",
        "ct-demo",
        "--messages",
        "40",
        "--every",
        "20",
      ]);
      expect(await d.exited, d.output()).toBe(0);
      const out = d.output();
      const served = (await (
        await fetch(`${builder?.base}/threads/ct-demo/prompt?agent=agent`)
      ).json()) as { messages: { content: string }[] };
      expect(served.messages[0]?.content).toContain(SEARCH_HEADER_LINE);
      const bytes = served.messages.reduce((n, m) => n + Buffer.byteLength(m.content), 0);
      // The last report, made once the worker caught up, is of this very prompt.
      const reports = [...out.matchAll(/ {2}prompt +(\d+\.\d) KB \((\d+) msgs/g)];
      expect(reports.at(-1)?.slice(1)).toEqual([
        (bytes / 1024).toFixed(1),
        String(served.messages.length),
      ]);
      expect(out).toContain("the agent is offered the tools: zoom, search");
      // One report per stretch of --every, the last one (40, a multiple of 20) once.
      expect(out.match(/^ +\d+ sent /gm)?.map((l) => l.trim())).toEqual(["20 sent", "40 sent"]);
    });
  },
);
