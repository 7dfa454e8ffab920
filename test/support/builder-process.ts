import type { InfraNames } from "../../services/config/names.ts";
import { freePort } from "../../services/util/processes.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { ServiceProcess, START_DEADLINE_MS } from "./service-process.ts";
import { workerEnv } from "./worker-process.ts";

/** The prompt-builder as a process, listening on 127.0.0.1 on a free port. */
export class BuilderProcess extends ServiceProcess {
  readonly base: string;

  constructor(env: NodeJS.ProcessEnv, port: number) {
    super("services/prompt-builder/main.ts", { ...env, HOST: "127.0.0.1", PORT: String(port) });
    this.base = `http://127.0.0.1:${port}`;
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
    await p.started("prompt-builder", ["HTTP on"], START_DEADLINE_MS);
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
