import type { InfraNames } from "../../services/config/names.ts";
import { namesToEnv } from "../../services/config/names.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { ServiceProcess, START_DEADLINE_MS } from "./service-process.ts";

/** The thread worker as `npm start` runs it. */
export class WorkerProcess extends ServiceProcess {
  constructor(env: NodeJS.ProcessEnv) {
    super("services/thread-worker/main.ts", env);
  }

  /** Resolves once the worker says it consumes; rejects with its output if it exits first. */
  ready(timeoutMs = START_DEADLINE_MS): Promise<void> {
    return this.started("thread worker", ["consuming "], timeoutMs);
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
