import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
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

/** A URL and where it was found: NATS_URL (or the config file), a `.data/nats.url`, or neither. */
export interface NatsUrlSource {
  url: string;
  /** `setting`, the file's path, or `default`. */
  from: string;
}

/**
 * NATS_URL (or the config file), else a running `npm start`'s server (its `.data/nats.url` in
 * this folder or the nearest one above, as git finds its `.git`), else the default.
 */
export function natsUrlSource(
  config: { settings: Pick<Config["settings"], "natsUrl"> },
  cwd = process.cwd(),
): NatsUrlSource {
  if (config.settings.natsUrl !== undefined)
    return { url: config.settings.natsUrl, from: "setting" };
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const file = localUrlFile(dir);
    if (existsSync(file)) {
      const url = readFileSync(file, "utf8").trim();
      if (url) return { url, from: file };
    }
    if (dirname(dir) === dir) return { url: DEFAULT_NATS_URL, from: "default" };
  }
}

export function natsUrlOf(
  config: { settings: Pick<Config["settings"], "natsUrl"> },
  cwd = process.cwd(),
): string {
  return natsUrlSource(config, cwd).url;
}
