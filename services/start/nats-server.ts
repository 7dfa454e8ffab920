import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  describeExit,
  findBinary,
  freePort,
  isPortFree,
  ManagedProcess,
  waitForPort,
  type Exit,
} from "../util/processes.ts";

// Beside this module's code, as TypeScript and compiled (the build emits it into dist/).
const LIFELINE = new URL("./nats-lifeline.js", import.meta.url);

/** nats-server is not installed; the message says how to install it. */
export class MissingNatsServerError extends Error {
  override readonly name = "MissingNatsServerError";
  readonly code = "NATS_SERVER_MISSING";
  constructor(binary: string) {
    super(
      `'${binary}' was not found on PATH. npm start runs a local NATS server when NATS_URL is unset; install it:\n` +
        `  Debian/Ubuntu:  sudo apt-get install -y nats-server\n` +
        `  macOS:          brew install nats-server\n` +
        `  other systems:  https://nats.io/download/ (one static binary; put it on PATH)\n` +
        `or set NATS_URL to a NATS server with JetStream you already run.`,
    );
  }
}

export interface LocalNatsOptions {
  /** Where JetStream keeps its files; created if missing. */
  storeDir: string;
  host?: string;
  /**
   * Used when free; otherwise (or when 0) any free port, so a second copy or another server does
   * not block us.
   */
  preferredPort?: number;
  binary?: string;
  /** Where its log goes (it is quiet on our terminal). */
  logFile?: string;
  timeoutMs?: number;
  /** A nats-server config file (`-c`); the options above override what it sets. */
  configFile?: string;
  /** Its environment, e.g. the passwords a config file refers to. */
  env?: NodeJS.ProcessEnv;
  /**
   * Run it through services/start/nats-lifeline.js, which stops it when this process dies (even
   * by SIGKILL), after the services it is told of have stopped.
   */
  lifeline?: boolean;
}

export interface LocalNats {
  url: string;
  port: number;
  /** nats-server, or its lifeline process (which passes signals on and exits as it does). */
  process: ManagedProcess;
  /** With a lifeline: the services to wait for, should this process die, before stopping. */
  waitFor(pids: readonly number[]): void;
  /** Shuts JetStream down cleanly (its files flushed) before the process exits. */
  stop(graceMs?: number): Promise<Exit>;
}

/** Starts `nats-server -js` and resolves once it accepts connections. */
export async function startNatsServer(options: LocalNatsOptions): Promise<LocalNats> {
  const binary = options.binary ?? "nats-server";
  const path = binary.includes("/") ? binary : findBinary(binary);
  if (path === undefined) throw new MissingNatsServerError(binary);
  const host = options.host ?? "127.0.0.1";
  const preferred = options.preferredPort ?? 4222;
  const port =
    preferred !== 0 && (await isPortFree(preferred, host)) ? preferred : await freePort(host);
  mkdirSync(options.storeDir, { recursive: true });

  const args = [
    ...(options.configFile ? ["-c", options.configFile] : []),
    ...["-js", "-a", host, "-p", String(port), "-sd", options.storeDir],
  ];
  const server = new ManagedProcess(
    "nats-server",
    options.lifeline ? process.execPath : path,
    options.lifeline ? [fileURLToPath(LIFELINE), path, ...args] : args,
    {
      output: "quiet",
      lifeline: options.lifeline === true,
      ...(options.logFile ? { logFile: options.logFile } : {}),
      ...(options.env ? { env: options.env } : {}),
    },
  );
  const timeoutMs = options.timeoutMs ?? 15_000;
  const ready = await Promise.race([
    waitForPort(host, port, timeoutMs).then((ok) => (ok ? "ready" : "timeout")),
    server.exited.then(() => "exited" as const),
  ]);
  if (ready !== "ready") {
    const why =
      ready === "exited"
        ? `it ${describeExit(await server.exited)}`
        : `it did not listen on ${host}:${port} within ${timeoutMs} ms`;
    await server.stop("SIGKILL", 1_000);
    const output = server.recentOutput();
    // Its fatal line is the one that says what to fix (port in use, store locked, bad config).
    const fatal = output
      .split("\n")
      .reverse()
      .find((line) => /\[FTL\]|^nats-server: /.test(line));
    const where = options.logFile ? `; log: ${options.logFile}` : "";
    throw new Error(
      `nats-server could not start: ${why}${fatal ? `: ${fatal}` : ""}${where}. Its last output:\n${output}`,
    );
  }
  return {
    url: `nats://${host}:${port}`,
    port,
    process: server,
    waitFor: (pids) => server.send({ services: pids }),
    // nats-server 2.9 shuts down the same way on SIGINT and SIGTERM, but exits 1 after SIGTERM;
    // SIGINT gives 0, so a non-zero exit still means something went wrong.
    stop: (graceMs = 10_000) => server.stop("SIGINT", graceMs),
  };
}
