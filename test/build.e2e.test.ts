import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build, ENTRIES, isFresh, ROOT } from "../services/build/build.js";
import { namesToEnv } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { uniqueNames } from "./support/thread-worker.ts";

// The compiled build (what `npm start` and `npx outline` run, and the e2e tier with them: the
// global setup builds dist/), here into a folder of its own; and the sources run without it.
let outdir: string;
beforeAll(async () => {
  // Inside the repository, so the build's imports of dependencies find node_modules.
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  outdir = mkdtempSync(join(ROOT, "dist", ".test-"));
  await build({ outdir });
});
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

function run(file: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [file, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

describe("the compiled build", () => {
  it("emits every entry, the summarizer's thread and nats-server's lifeline beside them", () => {
    for (const name of Object.keys(ENTRIES))
      expect(existsSync(join(outdir, `${name}.js`))).toBe(true);
    expect(Object.keys(ENTRIES)).toEqual(
      expect.arrayContaining(["extract-thread", "nats-lifeline"]),
    );
  });

  it("knows when a source changed since it was built", () => {
    expect(isFresh(ROOT, outdir)).toBe(true);
    const file = join(ROOT, "shared/tokens.ts");
    const later = new Date(Date.now() + 5_000);
    utimesSync(file, later, later);
    try {
      expect(isFresh(ROOT, outdir)).toBe(false);
    } finally {
      const now = new Date();
      utimesSync(file, now, now);
    }
  });

  it("runs the CLI: --help, and a send that the stream stores", async () => {
    const help = await run(join(outdir, "cli.js"), ["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("commands:");
    expect(help.stdout).toContain("replay");

    const url = process.env.NATS_URL ?? "";
    const names = uniqueNames();
    const nc = await connectNats({ url, name: "build-test" });
    const { jsm } = await ensureTopology(nc, names);
    const env: NodeJS.ProcessEnv = { ...process.env, ...namesToEnv(names) };
    const sent = await run(join(outdir, "cli.js"), ["send", "t1", "hello from the build"], env);
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    expect((await jsm.streams.info(names.chatStream)).state.messages).toBe(1);
    await nc.close();
  });

  it("runs the CLI's TypeScript through tsx with OUTLINE_FROM_SOURCES=1, compiling nothing", async () => {
    // A copy of the sources with no dist/ beside them (dependencies resolve up to the repo's).
    const copy = mkdtempSync(join(ROOT, "dist", ".test-sources-"));
    try {
      for (const folder of ["services", "shared", "machines", "package.json"])
        cpSync(join(ROOT, folder), join(copy, folder), { recursive: true });
      const env = { ...process.env, OUTLINE_FROM_SOURCES: "1" };
      const help = await run(join(copy, "services/cli/bin.js"), ["--help"], env);
      expect(help.stderr).toBe("");
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("commands:");
      expect(existsSync(join(copy, "dist"))).toBe(false);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
