import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

// `npm start` (its signal handling and lifelines, with stand-in services) as a process of its
// own, killed in the ways an operator kills it; then nothing it started may be left.
const FIXTURE = "test/support/start-fixture.ts";

let dir: string;
let spawned: ChildProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "outline-lifelines-"));
});
afterEach(() => {
  for (const child of spawned) child.kill("SIGKILL");
  spawned = [];
  for (const pid of leftIn(dir)) process.kill(pid, "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** The processes whose command line names the folder (nats-server's store, the stand-ins). */
function leftIn(folder: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, "utf8").includes(folder);
      } catch {
        return false;
      }
    })
    .map(Number);
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts the fixture through `command` (e.g. a shell standing for npm) and waits for the banner. */
function start(command: string[], env: NodeJS.ProcessEnv = process.env): Promise<Started> {
  return startIn(undefined, command, env);
}

async function startIn(
  cwd: string | undefined,
  command: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Started> {
  const [file = "", ...args] = command;
  const child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  spawned.push(child);
  let text = "";
  child.stdout?.on("data", (d: Buffer) => (text += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  await until(() => text.includes("stop:") || text.includes("exit "), 60_000);
  // The banner can come before the stand-ins ran their first line.
  await until(() => (text.match(/\] up/g) ?? []).length === 2 || text.includes("exit "), 30_000);
  return { child, output: () => text, exited };
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

const node = [process.execPath, "--import", "tsx", FIXTURE];

describe("npm start's lifelines", () => {
  it("leaves nothing running when it is SIGKILLed: the services drain, nats-server stops", async () => {
    const started = await start([...node, dir]);
    expect(leftIn(dir).length).toBeGreaterThanOrEqual(4); // the stand-ins, nats-server, its lifeline
    started.child.kill("SIGKILL");
    await until(() => leftIn(dir).length === 0, 40_000);
    // Each service saw its lifeline break and drained as on SIGTERM.
    expect(readFileSync(join(dir, "worker.stopped"), "utf8")).toBe("npm start is gone");
    expect(readFileSync(join(dir, "api.stopped"), "utf8")).toBe("npm start is gone");
    // Its lock is left behind, stale: the next start takes it over.
    expect(existsSync(join(dir, ".data", "start.lock"))).toBe(true);
    const again = await start([...node, dir]);
    again.child.kill("SIGTERM");
    expect(await again.exited).toBe(0);
  });

  it("stops everything when npm above its `sh -c` is SIGKILLed", async () => {
    // npm runs a script as `sh -c "<script>"`; a shell here stands for npm.
    const script = `sh -c '${node.join(" ")} ${dir}'; true`;
    const npm = await start(["sh", "-c", script], { ...process.env, npm_lifecycle_event: "start" });
    npm.child.kill("SIGKILL");
    await until(() => leftIn(dir).length === 0, 40_000);
    expect(readFileSync(join(dir, "worker.stopped"), "utf8")).toBe("SIGTERM");
  });

  it("refuses a second start in the same folder, naming the first, and touches nothing", async () => {
    const first = await start([...node, dir]);
    const url = readFileSync(join(dir, ".data", "nats.url"), "utf8");
    const second = spawn(process.execPath, ["--import", "tsx", FIXTURE, dir], { stdio: "pipe" });
    spawned.push(second);
    let text = "";
    second.stderr.on("data", (d: Buffer) => (text += d.toString()));
    second.stdout.on("data", (d: Buffer) => (text += d.toString()));
    const code = await new Promise((r) => second.on("exit", r));
    expect(code).toBe(1);
    expect(text).toContain(`another 'npm start' is running in this folder: PID ${first.child.pid}`);
    expect(text).toContain(url.trim());
    expect(readFileSync(join(dir, ".data", "nats.url"), "utf8")).toBe(url);
    expect(first.output()).not.toContain("exit ");

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(existsSync(join(dir, ".data", "start.lock"))).toBe(false);
  });

  it("stops everything on a SIGINT to npm's PID alone, services first", async () => {
    // A package whose start script has the repository's form, running the fixture instead.
    const manifest = JSON.parse(readFileSync("package.json", "utf8")) as {
      scripts: { start: string };
    };
    const script = manifest.scripts.start;
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const fixture = `${process.execPath} --import ${tsx} ${resolve(FIXTURE)} ${dir}`;
    const pkg = {
      name: "start-form",
      private: true,
      scripts: { start: script.replace("node services/start/bin.js", fixture) },
    };
    writeFileSync(join(dir, "package.json"), JSON.stringify(pkg));
    const npm = await startIn(dir, ["npm", "start"]);
    npm.child.kill("SIGINT");
    expect(await npm.exited).toBe(0);
    expect(npm.output()).toContain("SIGINT: draining the services, then stopping NATS");
    expect(npm.output()).toContain("exit 0");
    expect(readFileSync(join(dir, "worker.stopped"), "utf8")).toBe("SIGTERM");
    expect(leftIn(dir)).toEqual([]);
  });

  it("stops `npm run cluster` on a SIGINT to npm's PID alone", async () => {
    // The repository's cluster script, running a stand-in that says when SIGINT reaches it.
    const manifest = JSON.parse(readFileSync("package.json", "utf8")) as {
      scripts: { cluster: string };
    };
    const script = manifest.scripts.cluster;
    expect(script).toContain("tsx services/cluster/main.ts");
    const standIn = join(dir, "cluster-stand-in.ts");
    writeFileSync(
      standIn,
      'process.on("SIGINT", () => { console.log("cluster: SIGINT"); process.exit(0); });\n' +
        'console.log("cluster: up");\nsetInterval(() => {}, 1_000);\n',
    );
    const tsx = resolve("node_modules/.bin/tsx");
    const cluster = script.replace("tsx services/cluster/main.ts", `${tsx} ${standIn}`);
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: "cluster-form", private: true, scripts: { cluster } }),
    );
    const npm = spawn("npm", ["run", "cluster"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    spawned.push(npm);
    let text = "";
    npm.stdout.on("data", (d: Buffer) => (text += d.toString()));
    npm.stderr.on("data", (d: Buffer) => (text += d.toString()));
    const exited = new Promise((r) => npm.on("exit", r));
    await until(() => text.includes("cluster: up"), 60_000);
    npm.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(text).toContain("cluster: SIGINT");
    expect(leftIn(dir)).toEqual([]);
  });

  it("takes one Ctrl-C delivered twice (terminal and npm) as one graceful stop", async () => {
    const started = await start([...node, dir]);
    // What a terminal and npm do within milliseconds of each other.
    started.child.kill("SIGINT");
    started.child.kill("SIGINT");
    expect(await started.exited).toBe(0);
    expect(started.output()).not.toContain("again: killing everything");
    expect(readFileSync(join(dir, "worker.stopped"), "utf8")).toBe("SIGTERM");
    expect(leftIn(dir)).toEqual([]);
  });
});
