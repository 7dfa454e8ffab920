import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants, createWriteStream, type WriteStream } from "node:fs";
import { connect, createServer } from "node:net";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import { sleep } from "./wait.ts";

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The absolute path of an executable on PATH, or undefined when there is none. */
export function findBinary(name: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

/** True when nothing listens on host:port and we may bind it. */
export function isPortFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * True when another socket listens on host:port, so a server there would fail to bind; other
 * bind errors (a HOST not of this machine) are for the server to word.
 */
export function isPortTaken(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", (err: NodeJS.ErrnoException) => resolve(err.code === "EADDRINUSE"));
    server.listen(port, host, () => server.close(() => resolve(false)));
  });
}

/** A port the OS had free a moment ago (another process may still take it first). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Waits until something accepts connections on host:port; false after the timeout. */
export async function waitForPort(host: string, port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await canConnect(host, port)) return true;
    await sleep(50);
  }
  return false;
}

/** Waits until `url` answers 2xx; false after the timeout. */
export async function waitForHttp(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return true;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  return false;
}

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** `prefix`: each output line goes to our stdout/stderr as `[name] line`; `quiet`: kept only. */
  output?: "prefix" | "quiet";
  /** Also append everything the process writes to this file. */
  logFile?: string;
  /**
   * An IPC channel to it, its lifeline (services/util/lifeline.ts): it sees us die, SIGKILL
   * included, and stops.
   */
  lifeline?: boolean;
}

const KEPT_LINES = 50;

/** A child process we started, with its exit as a promise and its last lines of output. */
export class ManagedProcess {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  /**
   * Its output read to the end and its log file written: after `exited`, as a process's output
   * can still be in the pipe when it exits (or held open by a child of its own).
   */
  readonly closed: Promise<void>;
  #exit: Exit | undefined;
  /** Its last lines, each with whether it went to our terminal as it came. */
  #recent: { line: string; shown: boolean }[] = [];
  #printed = 0;
  #log: WriteStream | undefined;
  #watchers: { part: string; seen: () => void }[] = [];

  constructor(name: string, command: string, args: readonly string[], options: SpawnOptions = {}) {
    this.name = name;
    // Its own process group: a Ctrl-C in the terminal reaches only us, and we decide the order
    // in which children stop (services drain while NATS is still up).
    this.child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: options.lifeline ? ["ignore", "pipe", "pipe", "ipc"] : ["ignore", "pipe", "pipe"],
      detached: true,
    });
    this.#log = options.logFile ? createWriteStream(options.logFile, { flags: "a" }) : undefined;
    const prefix = options.output !== "quiet";
    for (const [stream, sink] of [
      [this.child.stdout, process.stdout],
      [this.child.stderr, process.stderr],
    ] as const) {
      if (stream === null) continue;
      createInterface({ input: stream }).on("line", (line) => {
        this.#keep(line, prefix);
        this.#log?.write(`${line}\n`);
        this.#watch(line);
        if (prefix) {
          sink.write(`[${name}] ${line}\n`);
          this.#printed += 1;
        }
      });
    }
    this.exited = new Promise<Exit>((resolve) => {
      const done = (exit: Exit) => {
        if (this.#exit !== undefined) return;
        this.#exit = exit;
        resolve(exit);
      };
      this.child.once("exit", (code, signal) => done({ code, signal }));
      // A spawn failure (ENOENT, EACCES) emits 'error' and never 'exit'.
      this.child.once("error", (err) => {
        this.#keep(`could not start: ${err.message}`, false);
        done({ code: 127, signal: null });
      });
    });
    // 'close' comes once its output streams have ended (a failed spawn's too): the log ends then,
    // not at 'exit', when lines still on their way were written after its end (an uncaught
    // ERR_STREAM_WRITE_AFTER_END, seen in a CI run when a nats-server was stopped under load).
    this.closed = new Promise<void>((resolve) => {
      this.child.once("close", () => {
        if (this.#log) this.#log.end(resolve);
        else resolve();
      });
    });
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  #keep(line: string, shown: boolean): void {
    this.#recent.push({ line, shown });
    if (this.#recent.length > KEPT_LINES) this.#recent.shift();
  }

  #watch(line: string): void {
    const seen = this.#watchers.filter((w) => line.includes(w.part));
    if (seen.length === 0) return;
    this.#watchers = this.#watchers.filter((w) => !seen.includes(w));
    for (const w of seen) w.seen();
  }

  /** Resolves once it prints a line containing `part` (on either stream); never if it does not. */
  printed(part: string): Promise<void> {
    if (this.#recent.some((r) => r.line.includes(part))) return Promise.resolve();
    return new Promise((seen) => this.#watchers.push({ part, seen }));
  }

  /** The last lines it wrote, for an error message when it dies. */
  recentOutput(): string {
    return this.#recent.map((r) => r.line).join("\n");
  }

  /**
   * Its last lines that did not go to our terminal as they came (a quiet process's, a failed
   * spawn's reason): what an error message about its death must show, the rest is above it.
   */
  unshownOutput(): string {
    return this.#recent
      .filter((r) => !r.shown)
      .map((r) => r.line)
      .join("\n");
  }

  /** How many lines of it went to our terminal, each prefixed with `[name]`. */
  get printedLines(): number {
    return this.#printed;
  }

  /** Sends a signal to it; SIGKILL goes to its whole process group (what it started dies too). */
  signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    const pid = this.child.pid;
    if (signal === "SIGKILL" && pid !== undefined) {
      try {
        process.kill(-pid, signal);
        return;
      } catch {
        // no group (it is gone already): the plain kill below
      }
    }
    this.child.kill(signal);
  }

  /** A message over its lifeline, if it has one and still listens. */
  send(message: unknown): void {
    if (this.running && this.child.connected) this.child.send(message as object);
  }

  /** Asks it to stop, and kills it when it has not within `graceMs`. */
  async stop(signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<Exit> {
    if (!this.running) return this.exited;
    this.signal(signal);
    const timer = setTimeout(() => this.signal("SIGKILL"), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export function describeExit(exit: Exit): string {
  return exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
}
