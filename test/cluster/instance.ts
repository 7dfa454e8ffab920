import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { namesToEnv, type InfraNames } from "../../services/config/names.ts";
import type { CoreSettings } from "../../shared/settings.ts";

/**
 * One instance as an operator runs it: `npm start` with NATS_URL set (services/start/main.ts:
 * a worker and a prompt-builder, each a child process), in a process group of its own.
 */
export class Instance {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly port: number;
  output = "";

  constructor(
    url: string,
    names: InfraNames,
    settings: CoreSettings,
    port: number,
    extra: Record<string, string> = {},
  ) {
    this.port = port;
    const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (!/^(HISTORY_|OUTLINE_|NATS_)/.test(key)) env[key] = value;
    }
    Object.assign(env, namesToEnv(names), {
      NATS_URL: url,
      PORT: String(port),
      HOST: "127.0.0.1",
      HISTORY_LINE: String(settings.line),
      HISTORY_TAIL: settings.tail.join(","),
      HISTORY_OUTLINE: settings.outline.join(","),
      HISTORY_CONCURRENCY: String(settings.concurrency),
      HISTORY_GROUP: String(settings.group ?? 1),
      HISTORY_SUMMARIZER: "extractive",
      OUTLINE_CONFIG: "",
      OUTLINE_REPLICAS: "3",
      ...extra,
    });
    this.child = spawn(process.execPath, ["--import", loader, "services/start/main.ts"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    this.child.stdout?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.child.stderr?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => resolve({ code, signal })),
    );
  }

  /** Resolves once its worker consumes and its prompt-builder answers. */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(this.output.includes("consuming ") && this.output.includes("HTTP on"))) {
      if (this.child.exitCode !== null || Date.now() > deadline)
        throw new Error(
          `instance on port ${this.port} did not start:\n${this.output.slice(-4_000)}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async cluster(): Promise<{
    members: { id: string; pid: number; partitions: number[]; threads: number; lag: number }[];
    partitions: number;
    leases: Record<string, string>;
  }> {
    const res = await fetch(`http://127.0.0.1:${this.port}/cluster`);
    return (await res.json()) as Awaited<ReturnType<Instance["cluster"]>>;
  }

  sigterm(): void {
    this.child.kill("SIGTERM");
  }

  /** SIGKILL of the whole process tree at once: the instance dies as a host would. */
  killTree(): void {
    const root = this.child.pid;
    if (root === undefined) return;
    const table = execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" });
    const children = new Map<number, number[]>();
    for (const line of table.trim().split("\n")) {
      const [pid, ppid] = line.trim().split(/\s+/).map(Number) as [number, number];
      children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    }
    const tree: number[] = [];
    const walk = (pid: number) => {
      tree.push(pid);
      for (const c of children.get(pid) ?? []) walk(c);
    };
    walk(root);
    for (const pid of tree) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }

  /** The worker's member id, from its start line. */
  memberId(): string | undefined {
    return /as member (\S+) holding/.exec(this.output)?.[1];
  }
}
