import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { InfraNames } from "../../services/config/names.ts";
import { namesToEnv } from "../../services/config/names.ts";
import type { CoreSettings } from "../../shared/settings.ts";

/** The thread worker as `npm start` runs it: node with the tsx loader, its own process group. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output = "";

  constructor(env: NodeJS.ProcessEnv) {
    const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    this.child = spawn(process.execPath, ["--import", loader, "services/thread-worker/main.ts"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stdout?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.child.stderr?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => resolve({ code, signal })),
    );
  }

  /** Resolves once the worker says it consumes; rejects with its output if it exits first. */
  async ready(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.output.includes("consuming ")) {
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`thread worker did not start:\n${this.output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}

/** Environment that points a worker process at a test's own streams, with small settings. */
export function workerEnv(
  natsUrl: string,
  names: InfraNames,
  settings: CoreSettings,
  extra: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NATS_URL: natsUrl,
    HISTORY_LINE: String(settings.line),
    HISTORY_TAIL: settings.tail.join(","),
    HISTORY_OUTLINE: settings.outline.join(","),
    HISTORY_CONCURRENCY: String(settings.concurrency),
    HISTORY_GROUP: String(settings.group ?? 1),
    HISTORY_SUMMARIZER: "extractive",
    // No config file from the working directory may leak into the test.
    OUTLINE_CONFIG: "",
    ...extra,
  };
  Object.assign(env, namesToEnv(names));
  return env;
}
