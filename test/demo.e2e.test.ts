import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { startNatsServer } from "../services/start/nats-server.ts";

const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  // Nothing listens here: refusals come before any connection is tried.
  NATS_URL: "nats://127.0.0.1:1",
  OUTLINE_CONFIG: "",
  OUTLINE_API_PREFIX: "dm.api",
};

/** `npm run demo -- …` as a process: its exit code and its stdout and stderr. */
function demo(
  args: string[],
  extra: Record<string, string> = {},
  onOutput?: (out: string) => void,
) {
  const child = spawn("npx", ["tsx", "services/demo/main.ts", ...args], {
    env: { ...env, ...extra },
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    onOutput?.(stdout);
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once("close", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, exited };
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("npm run demo's arguments", () => {
  it("refuses a thread id that breaks the rule at parse, with the rule and the usage", async () => {
    for (const thread of ["bad id", "", "x".repeat(129), "a.b"]) {
      const { code, stdout, stderr } = await demo(["--thread", thread]).exited;
      expect(code).toBe(2);
      expect(stdout).toBe("");
      expect(stderr).toMatch(
        new RegExp(
          `^demo: --thread '${thread.replace(".", "\\.")}': a thread id is 1–128 characters of A-Z, a-z, 0-9, '_' or '-'`,
        ),
      );
      expect(stderr).toContain("usage: npm run demo");
    }
  });

  it("refuses an unknown option or an argument with exit code 2 and the usage", async () => {
    for (const args of [["--bogus"], ["extra"], ["--messages", "5"]]) {
      const { code, stderr } = await demo(args).exited;
      expect(code, stderr).toBe(2);
      expect(stderr).toMatch(/^demo: /);
      expect(stderr).toContain("usage: npm run demo");
    }
  });
});

describe("npm run demo when the system stops under it", () => {
  it("says what it was doing and to check npm start, not a bare 'timeout'", async () => {
    const dir = mkdtempSync(join(tmpdir(), "outline-demo-"));
    cleanup.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    const nats = await startNatsServer({ storeDir: join(dir, "nats"), preferredPort: 0 });
    cleanup.push(async () => void (await nats.stop()));
    // A stand-in prompt-builder: the demo asks for the tools before it plays.
    const nc = await connectNats({ url: nats.url, name: "demo-test" });
    nc.subscribe("dm.api.tools", { callback: (_, m) => void m.respond("[]") });
    cleanup.push(() => nc.close());

    let stopped = false;
    const run = demo(
      // Publishing all along: no report before the end.
      ["--thread", "dm-stop", "--messages", "1000000", "--every", "10000000"],
      { NATS_URL: nats.url },
      (out) => {
        if (stopped || !out.includes("messages into thread dm-stop")) return;
        stopped = true;
        void nc.close().then(() => nats.stop());
      },
    );
    const { code, stdout, stderr } = await run.exited;
    expect(stopped, `${stdout}${stderr}`).toBe(true);
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toHaveLength(1);
    expect(stderr).toMatch(
      /^demo: stopped while sending message \d+ of 1000000 to chat\.dm-stop\.message\.created: .+; .*is npm start still running/,
    );
  });
});
