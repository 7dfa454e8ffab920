import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

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
  OPENAI_API_KEY: "",
};
const WORKER = "services/thread-worker/main.ts";
const hasWorker = existsSync(WORKER);

/** A child process whose output is collected, with a wait for text to appear in it. */
function start(args: string[]) {
  const child: ChildProcessWithoutNullStreams = spawn("npx", ["tsx", ...args], {
    env,
    detached: true,
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  return {
    child,
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
      // The process group: npx, tsx and node.
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
    },
  };
}

let worker: ReturnType<typeof start> | undefined;
let chat: ReturnType<typeof start> | undefined;

describe.skipIf(!hasWorker)(
  "npm run chat against a running thread worker (stdin/stdout pipes)",
  () => {
    beforeAll(async () => {
      worker = start([WORKER]);
      await worker.waitFor((o) => o.includes("consuming CT_CHAT"), "the worker to start");
      chat = start(["services/chat/main.ts", "--thread", "ct-thread"]);
      await chat.waitFor((o) => o.includes("chat in thread ct-thread"), "the chat to start");
    });

    afterAll(() => {
      chat?.stop();
      worker?.stop();
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

      const mark = c.output().length;
      c.child.stdin.write("/stats\n/outline\n/zoom 0 1\n");
      await c.waitFor((o) => o.slice(mark).includes("message 0 ("), "stats, outline and zoom");
      const after = c.output().slice(mark);
      expect(after).toMatch(
        /stats: tail ~\d+ tokens, outline [1-9]\d* bytes, cuts \d+ \(seen by this chat\), merges \d+, model calls 0/,
      );
      expect(after).toMatch(
        /outline: [1-9]\d* lines, \d+ bytes, boundary [1-9]\d* of \d+ messages/,
      );
      expect(after).toContain("hello, I am Ana and my order is 4411");
    });
  },
);
