import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "./load.ts";

/** Where a nats-server usually is when nothing says otherwise. */
export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

/**
 * `npm start` may run its nats-server on another port (4222 taken): it writes the URL here so
 * the CLI, chat and demo started from the same folder find it without NATS_URL.
 */
export const LOCAL_URL_FILE = "nats.url";
const localUrlFile = (cwd: string): string => join(cwd, ".data", LOCAL_URL_FILE);

/** Written into the start's data folder (`./.data` by default). */
export function writeLocalNatsUrl(dataDir: string, url: string): void {
  writeFileSync(join(dataDir, LOCAL_URL_FILE), `${url}\n`);
}

export function removeLocalNatsUrl(dataDir: string): void {
  rmSync(join(dataDir, LOCAL_URL_FILE), { force: true });
}

/** NATS_URL (or the config file), else a running `npm start`'s server, else the default. */
export function natsUrlOf(config: Pick<Config, "settings">, cwd = process.cwd()): string {
  if (config.settings.natsUrl !== undefined) return config.settings.natsUrl;
  const file = localUrlFile(cwd);
  if (existsSync(file)) {
    const url = readFileSync(file, "utf8").trim();
    if (url) return url;
  }
  return DEFAULT_NATS_URL;
}
