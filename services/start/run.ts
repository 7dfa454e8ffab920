import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { SettingsError } from "../../shared/errors.ts";
import { CONFIG_VARIABLE, loadSettings, type Config } from "../config/load.ts";
import { redactUrl } from "../nats/connect.ts";
import { acquireFolderLock, FolderBusyError, type FolderLock } from "./folder-lock.ts";
import { startNatsServer, type LocalNats } from "./nats-server.ts";
import {
  describeExit,
  isPortTaken,
  ManagedProcess,
  waitForHttp,
  type Exit,
} from "../util/processes.ts";
import { removeLocalNatsUrl, writeLocalNatsUrl } from "../config/nats-url.ts";
import { sleep } from "../util/wait.ts";
import { PARTITIONS_VARIABLE } from "../config/names.ts";
import { partitionMappings } from "../cluster/server-config.ts";
import { INSTANCE_VARIABLE } from "../cluster/instance.ts";

/**
 * Partitions of `npm start`'s own nats-server when OUTLINE_PARTITIONS is unset: as `npm run
 * cluster`'s, enough for a few dozen instances.
 */
export const LOCAL_PARTITIONS = 32;

export interface ServiceEntry {
  /** Shown before each line it prints. */
  name: string;
  /** Its main file, relative to the working directory. */
  entry: string;
  /** It serves the HTTP API on HOST:PORT (we wait for its /healthz and print the address). */
  http?: boolean;
  /**
   * Part of the line it prints once its server listens: until then, an answer on its port is
   * another process's, and the banner must not call the system running.
   */
  ready?: string;
  /** Started only when this says so (e.g. a setting turns the service on). */
  when?: (config: Config) => boolean;
  /** Its arguments, from those `npm start` was given (e.g. the worker's `--inspect`). */
  args?: (argv: readonly string[]) => string[];
  /**
   * Throws the SettingsError the service would stop with at its start (e.g. no API token off
   * loopback): said once, before anything starts, instead of by a service that dies at once.
   */
  check?: (config: Config) => void;
}

/** Ways the operator asks us to stop: the first drains, the second kills. */
export interface StartControl {
  stop: Promise<string>;
  force: Promise<string>;
}

export interface StartOptions {
  services: readonly ServiceEntry[];
  env?: NodeJS.ProcessEnv;
  argv?: readonly string[];
  cwd?: string;
  /** Local nats-server data and log; default `<cwd>/.data`. */
  dataDir?: string;
  natsBinary?: string;
  /**
   * `tsx` (default): the entries are TypeScript, run through tsx's loader; `none`: they are
   * compiled JavaScript (dist/).
   */
  loader?: "tsx" | "none";
  /** How long services get to drain before they are killed. */
  stopGraceMs?: number;
  /** How long to wait for the HTTP service's /healthz before printing the banner anyway. */
  readyTimeoutMs?: number;
  out?: (line: string) => void;
  err?: (line: string) => void;
}

// Every child ever started, so that an unexpected exit of this process can still kill them.
const started = new Set<ManagedProcess>();

/** Kills whatever is still running; for a last-resort exit handler. */
export function killAllStarted(): void {
  for (const p of started) p.signal("SIGKILL");
}

function tsxLoader(): string {
  const require = createRequire(import.meta.url);
  return pathToFileURL(require.resolve("tsx")).href;
}

/** The config file of `npm start`'s own nats-server: the partition mapping (docs/scale-out.md). */
export function localServerConfig(config: Config, partitions: number): string {
  return [
    "# Written by npm start at each start; edit the settings, not this file.",
    partitionMappings(config.names, partitions),
  ].join("\n");
}

/** A bad setting refuses the start with exit code 1; any other error is not ours to word. */
function refuse(e: unknown, err: (line: string) => void): number {
  if (!(e instanceof SettingsError)) throw e;
  err(`outline: bad setting: ${e.message}`);
  return 1;
}

function browsableHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

/**
 * The `outline inspect` command that receives what the worker sends under `--inspect[=url]`:
 * with a URL, its port (and host) must be passed too, or it listens on its default 8787.
 */
export function inspectWatch(arg: string): string {
  if (!arg.startsWith("--inspect=")) return "npx outline inspect";
  let url: URL;
  try {
    url = new URL(arg.slice("--inspect=".length));
  } catch {
    return "npx outline inspect --help (the worker takes --inspect=ws://host:port)";
  }
  if (url.protocol !== "ws:")
    return "a receiver of your own (npx outline inspect takes ws:// only)";
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = url.port === "" ? "80" : url.port;
  return `npx outline inspect${host === "127.0.0.1" ? "" : ` --host ${host}`} --port ${port}`;
}

function banner(
  config: Config,
  natsUrl: string,
  local: number | undefined,
  http: string,
  ready: boolean,
  argv: readonly string[],
) {
  const inspect = argv.find((a) => a === "--inspect" || a.startsWith("--inspect="));
  const nats =
    local !== undefined
      ? `${natsUrl}  (local nats-server, data in ./.data/nats)`
      : `${redactUrl(natsUrl)}  (from NATS_URL)`;
  return [
    "",
    `outline is ${ready ? "running" : "starting (GET /healthz is not healthy yet: the HTTP API or the worker's join)"}`,
    `  NATS:          ${nats}`,
    `  HTTP API:      ${http}`,
    `  explorer:      ${http}/ui/`,
    `  send:          npx outline send <thread> <text>`,
    `  read a prompt: curl '${http}/threads/<thread>/prompt?agent=<agent>'`,
    `  outline:       curl '${http}/threads/<thread>/outline'`,
    `  settings:      ${config.configFile ?? "defaults and environment (no config file)"}`,
    ...(local !== undefined
      ? [
          `  instances:     add one: NATS_URL=$(cat .data/nats.url) PORT=${config.settings.port + 1} npm start (${local} partitions shared)`,
        ]
      : []),
    ...(inspect
      ? [
          `  inspector:     the worker's thread actors (${inspect}); watch: ${inspectWatch(inspect)}`,
        ]
      : []),
    "  stop:          Ctrl-C (drains, then stops)",
    "",
  ];
}

/** True once `who` said it listens (when it says so) and then `url` answers 2xx. */
async function serving(
  who: ManagedProcess,
  entry: ServiceEntry,
  url: string,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  if (entry.ready !== undefined) {
    const ready = entry.ready;
    const said = await Promise.race([
      who.printed(ready).then(() => true),
      sleep(timeoutMs, undefined, { unref: true }),
    ]);
    if (said !== true) return false;
  }
  return waitForHttp(url, Math.max(1_000, deadline - Date.now()));
}

/**
 * Why we stop when `who` died. Lines it printed as they came are above, its error among them:
 * they are pointed at, not printed again; what was never shown (a quiet process's log, a spawn
 * that failed) is printed here.
 */
async function deathNotice(who: ManagedProcess, exit: Exit): Promise<string> {
  // Its last lines can still be in the pipe at its exit: they come above this notice, not below.
  // Bounded: a child it left behind could hold its output open.
  await Promise.race([who.closed, sleep(2_000, undefined, { unref: true })]);
  const head = `outline: ${who.name} ${describeExit(exit)}; stopping everything`;
  const unshown = who.unshownOutput();
  if (unshown !== "") return `${head}. Its last output:\n${unshown}`;
  if (who.printedLines > 0) return `${head} (its output is above, marked [${who.name}]).`;
  return `${head}; it printed nothing.`;
}

/**
 * Runs the whole system on one machine: a local nats-server unless NATS_URL is set, then the
 * services as child processes. Resolves with the exit code once everything has stopped.
 */
export async function runStart(options: StartOptions, control: StartControl): Promise<number> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const out = options.out ?? ((line: string) => console.log(line));
  const err = options.err ?? ((line: string) => console.error(line));

  let config: Config;
  try {
    config = loadSettings(env, options.argv ?? [], cwd);
  } catch (e) {
    return refuse(e, err);
  }
  for (const warning of config.warnings) err(`outline: warning: ${warning}`);

  const wanted = options.services.filter((s) => s.when?.(config) ?? true);
  try {
    for (const s of wanted) s.check?.(config);
  } catch (e) {
    return refuse(e, err);
  }
  const missing = wanted.filter((s) => !existsSync(resolve(cwd, s.entry)));
  if (missing.length > 0) {
    for (const s of missing) {
      err(
        `outline: ${s.entry} is missing, so the ${s.name} service cannot start; ` +
          `check that the checkout is complete, or remove it from the list in services/start/main.ts`,
      );
    }
    return 1;
  }

  let local: LocalNats | undefined;
  let lock: FolderLock | undefined;
  let partitions: number | undefined;
  let natsUrl = config.settings.natsUrl;
  const dataDir = options.dataDir ?? join(cwd, ".data");
  const http = `http://${browsableHost(config.settings.host)}:${config.settings.port}`;
  // Another process on PORT would answer our /healthz wait while our service fails to bind:
  // refused before anything starts, rather than a "running" banner followed by its death.
  const httpEntry = wanted.find((s) => s.http);
  const portTaken = async (): Promise<boolean> => {
    const { host, port } = config.settings;
    if (httpEntry === undefined || port === 0 || !(await isPortTaken(port, host))) return false;
    err(
      `outline: PORT: ${host}:${port} is already in use, so the ${httpEntry.name} cannot serve ` +
        `there; nothing was started. Stop what listens there (another npm start?) or set PORT ` +
        `to a free port`,
    );
    return true;
  };
  if (natsUrl === undefined) {
    mkdirSync(dataDir, { recursive: true });
    // One start per folder runs its nats-server on ./.data: a second exits here, touching nothing.
    try {
      lock = acquireFolderLock(dataDir);
    } catch (e) {
      if (!(e instanceof FolderBusyError)) throw e;
      err(`outline: ${e.message}`);
      return 1;
    }
    if (await portTaken()) {
      lock.release();
      return 1;
    }
    // The partition mapping is in its config from the first start: a second instance pointed
    // at it shares the threads (SPEC §9), and a CHAT stream made before is upgraded in place
    // by the worker (docs/scale-out.md, "Upgrading an existing CHAT stream").
    const configFile = join(dataDir, "nats-server.conf");
    partitions = config.names.partitions ?? LOCAL_PARTITIONS;
    writeFileSync(configFile, localServerConfig(config, partitions));
    try {
      local = await startNatsServer({
        configFile,
        storeDir: join(dataDir, "nats"),
        logFile: join(dataDir, "nats-server.log"),
        lifeline: true,
        ...(options.natsBinary ? { binary: options.natsBinary } : {}),
      });
    } catch (e) {
      lock.release();
      err(`outline: ${(e as Error).message}`);
      return 1;
    }
    started.add(local.process);
    natsUrl = local.url;
    lock.update({
      nats: natsUrl,
      http,
      ...(local.process.pid ? { natsPid: local.process.pid } : {}),
    });
    writeLocalNatsUrl(dataDir, natsUrl);
  } else if (await portTaken()) {
    return 1;
  }

  // Names this instance to its services: the prompt-builder's /healthz asks its own worker.
  const instance = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const childEnv: NodeJS.ProcessEnv = { ...env, NATS_URL: natsUrl, [INSTANCE_VARIABLE]: instance };
  if (partitions !== undefined) childEnv[PARTITIONS_VARIABLE] = String(partitions);
  // The children must read the same file even when it was named with --config.
  if (config.configFile !== undefined) childEnv[CONFIG_VARIABLE] = config.configFile;
  const loader = options.loader === "none" ? [] : ["--import", tsxLoader()];
  const services = wanted.map((s) => {
    const args = [...loader, s.entry, ...(s.args?.(options.argv ?? []) ?? [])];
    const p = new ManagedProcess(s.name, process.execPath, args, {
      cwd,
      env: childEnv,
      lifeline: true,
    });
    started.add(p);
    return p;
  });
  local?.waitFor(services.flatMap((p) => (p.pid === undefined ? [] : [p.pid])));

  type Outcome = { kind: "stop"; why: string } | { kind: "died"; who: ManagedProcess; exit: Exit };
  const watched = local ? [...services, local.process] : services;
  const outcome: Promise<Outcome> = Promise.race([
    control.stop.then((why) => ({ kind: "stop" as const, why })),
    ...watched.map((who) => who.exited.then((exit) => ({ kind: "died" as const, who, exit }))),
  ]);

  // undefined: a service died (or a stop came) first; what follows says so, and a banner above
  // it would bury it.
  const httpProcess = httpEntry && services[wanted.indexOf(httpEntry)];
  const ready = httpProcess
    ? await Promise.race([
        serving(httpProcess, httpEntry, `${http}/healthz`, options.readyTimeoutMs ?? 30_000),
        outcome.then(() => undefined),
      ])
    : true;
  if (ready !== undefined) {
    const argv = options.argv ?? [];
    const shared = local ? partitions : undefined;
    for (const line of banner(config, natsUrl, shared, http, ready, argv)) out(line);
  }

  const result = await outcome;
  let code = 0;
  if (result.kind === "died") {
    err(await deathNotice(result.who, result.exit));
    code = 1;
  } else {
    // With NATS_URL set the server is not ours to stop.
    out(`outline: ${result.why}: draining the services${local ? ", then stopping NATS" : ""}…`);
  }

  const graceMs = options.stopGraceMs ?? 20_000;
  const orderly = (async () => {
    await Promise.all(services.map((p) => p.stop("SIGTERM", graceMs)));
    await local?.stop();
    if (local) removeLocalNatsUrl(dataDir);
    lock?.release();
    return code;
  })();
  const forced = control.force.then((why) => {
    err(`outline: ${why} again: killing everything now`);
    killAllStarted();
    return 130;
  });
  const finalCode = await Promise.race([orderly, forced]);
  for (const p of watched) await p.exited;
  // After a forced stop too: nothing of ours runs any more.
  lock?.release();
  for (const p of watched) started.delete(p);
  if (finalCode === 0) out("outline: stopped");
  return finalCode;
}
