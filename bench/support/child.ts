// A TypeScript script run as its own Node process (with the tsx loader, as `npm start` runs the
// services), for benches that measure a consumer outside the bench's process. Its output lines
// can be awaited, its CPU time read from /proc, and it is always stopped: SIGTERM, then SIGKILL
// after a timeout, and SIGKILL if the bench process exits while it still runs.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

/**
 * CPU seconds (user + system) a process, or one of its threads (`task`), has used so far, from
 * /proc; undefined elsewhere or once it ended.
 */
export function cpuSecondsOf(pid: number | undefined, task?: string): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command name (which may hold spaces): utime and stime are 14th and 15th.
    const stat = readFileSync(
      `/proc/${pid}${task === undefined ? "" : `/task/${task}`}/stat`,
      "utf8",
    );
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

const KEPT_LINES = 40;

export class BenchChild {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  #recent: string[] = [];
  #waiters: { match: (line: string) => boolean; resolve: (line: string) => void }[] = [];
  #exitedWith: string | undefined;
  #failExit: ((err: Error) => void)[] = [];
  readonly #killOnExit = () => this.child.kill("SIGKILL");

  /**
   * `script`: a path from the repository root or absolute; `env`: the child's whole environment;
   * `nodeArgs`: extra options for node (e.g. `--cpu-prof`).
   */
  constructor(name: string, script: string, env: NodeJS.ProcessEnv, nodeArgs: string[] = []) {
    this.name = name;
    // Compiled JavaScript (a service's dist/ entry) runs as it is deployed, without a loader.
    const loader = script.endsWith(".js")
      ? []
      : ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href];
    this.child = spawn(process.execPath, [...nodeArgs, ...loader, script], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    process.once("exit", this.#killOnExit);
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on("line", (line) => this.#line(line));
    }
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        process.removeListener("exit", this.#killOnExit);
        this.#exitedWith = signal ?? `code ${code}`;
        const err = new Error(
          `${this.name} exited (${this.#exitedWith}); its last output:\n${this.output()}`,
        );
        for (const fail of this.#failExit.splice(0)) fail(err);
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  output(): string {
    return this.#recent.join("\n");
  }

  #line(line: string): void {
    this.#recent.push(line);
    if (this.#recent.length > KEPT_LINES) this.#recent.shift();
    for (const w of [...this.#waiters]) {
      if (!w.match(line)) continue;
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve(line);
    }
  }

  /** The first line (from now on) that `match` accepts; rejects if the child exits first. */
  waitFor(match: (line: string) => boolean, timeoutMs = 60_000): Promise<string> {
    if (this.#exitedWith !== undefined) {
      return Promise.reject(new Error(`${this.name} exited (${this.#exitedWith})`));
    }
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error(`${this.name}: no expected line in ${timeoutMs} ms:\n${this.output()}`));
      }, timeoutMs);
      const waiter = {
        match,
        resolve: (line: string) => {
          clearTimeout(timer);
          resolve(line);
        },
      };
      this.#waiters.push(waiter);
      this.#failExit.push((err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  cpuSeconds(): number | undefined {
    return cpuSecondsOf(this.pid);
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.#exitedWith !== undefined) return;
    this.child.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), graceMs)));
    const outcome = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (outcome === "late") {
      console.warn(`  ${this.name} did not stop within ${graceMs} ms of SIGTERM; killing it`);
      this.child.kill("SIGKILL");
      await this.exited;
    }
  }
}
