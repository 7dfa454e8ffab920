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
/** `npm run cluster` writes its servers' URLs into its own data folder, `.data/cluster`. */
export const CLUSTER_DIR = "cluster";
const clusterUrlFile = (cwd: string): string => join(cwd, ".data", CLUSTER_DIR, LOCAL_URL_FILE);
const isClusterFile = (from: string): boolean => from.endsWith(clusterUrlFile(""));
const writer = (from: string): string => (isClusterFile(from) ? "npm run cluster" : "npm start");

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
 * this folder or the nearest one above, as git finds its `.git`) or `npm run cluster`'s
 * (`.data/cluster/nats.url`; `npm start`'s first when a folder has both), else the default.
 */
export function natsUrlSource(
  config: { settings: Pick<Config["settings"], "natsUrl"> },
  cwd = process.cwd(),
): NatsUrlSource {
  if (config.settings.natsUrl !== undefined)
    return { url: config.settings.natsUrl, from: "setting" };
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    for (const file of [localUrlFile(dir), clusterUrlFile(dir)]) {
      if (!existsSync(file)) continue;
      const url = readFileSync(file, "utf8").trim();
      if (url) return { url, from: file };
    }
    if (dirname(dir) === dir) return { url: DEFAULT_NATS_URL, from: "default" };
  }
}

/** Where the URL came from, in words (shown after it in brackets). */
export function describeNatsUrlSource({ from }: Pick<NatsUrlSource, "from">): string {
  if (from === "setting") return "set by NATS_URL, in the environment or the config file";
  if (from === "default")
    return `the default: NATS_URL is unset, and no .data/${LOCAL_URL_FILE} of a running 'npm start' (or .data/${CLUSTER_DIR}/${LOCAL_URL_FILE} of 'npm run cluster') in this folder or above`;
  return `from ${from}, written by ${isClusterFile(from) ? "'npm run cluster'" : "an 'npm start'"}`;
}

/** A URL from a `.data/nats.url` (not NATS_URL, not the default). */
export function isLocalUrlFile(from: string): boolean {
  return from !== "setting" && from !== "default";
}

/**
 * What to do when nothing answers at a URL from `from`. The file is written once its server
 * listens and removed when it stops: a file nobody answers is what a killed `npm start` leaves.
 */
export function unreachableAdvice(from: string): string {
  if (from === "default")
    return "run 'npm start' in this folder (it starts a local nats-server), or set NATS_URL to your server";
  if (isLocalUrlFile(from)) {
    const folder = dirname(dirname(isClusterFile(from) ? dirname(from) : from));
    return `the '${writer(from)}' that wrote it is not running (killed?): start it again ('${writer(from)}' in ${folder}), or set NATS_URL to a server that runs`;
  }
  return "start nats-server with JetStream ('nats-server -js'), fix NATS_URL, or unset it and use 'npm start' to run a local server";
}
