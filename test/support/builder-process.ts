import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { InfraNames } from "../../services/config/names.ts";
import { freePort } from "../../services/start/processes.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { workerEnv } from "./worker-process.ts";

/** The prompt-builder as a process, listening on 127.0.0.1 on a free port. */
export class BuilderProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly base: string;
  output = "";

  constructor(env: NodeJS.ProcessEnv, port: number) {
    const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    this.base = `http://127.0.0.1:${port}`;
    this.child = spawn(process.execPath, ["--import", loader, "services/prompt-builder/main.ts"], {
      env: { ...env, HOST: "127.0.0.1", PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stdout?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.child.stderr?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => resolve({ code, signal })),
    );
  }

  static async start(
    url: string,
    names: InfraNames,
    settings: CoreSettings,
    extra: Record<string, string> = {},
  ): Promise<BuilderProcess> {
    const p = new BuilderProcess(
      workerEnv(url, names, settings, extra),
      await freePort("127.0.0.1"),
    );
    const deadline = Date.now() + 20_000;
    while (!p.output.includes("HTTP on")) {
      if (p.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`prompt-builder did not start:\n${p.output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return p;
  }

  async get(path: string): Promise<{ status: number; body: unknown; text: string }> {
    const res = await fetch(`${this.base}${path}`);
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, body, text };
  }
}
