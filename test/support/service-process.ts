import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ENTRIES, ROOT } from "../../services/build/build.js";

/**
 * How long a service gets to say it started. It only bounds a hang: on a 2-core machine at a
 * load average of 20 a worker's start (node, tsx, NATS setup) took over 20 s of wall time.
 */
export const START_DEADLINE_MS = 120_000;

/** CPU seconds the process has used (Linux /proc): tells a slow start from a stuck one. */
function cpuUsed(pid: number | undefined): string {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    // utime and stime, in clock ticks (100 a second on Linux): fields 14 and 15 of stat.
    return `${((Number(fields[11]) + Number(fields[12])) / 100).toFixed(1)} s of CPU`;
  } catch {
    return "CPU use unknown";
  }
}

/**
 * How a service's main file runs: compiled, as deployed (dist/, built by the global setup), or
 * with OUTLINE_FROM_SOURCES=1 its TypeScript through tsx, whose start every process of the e2e
 * tier paid (`outline dead --help`: 0.67 s against 0.30 s compiled, quiet; more under load).
 */
function runnable(entry: string): string[] {
  const name = Object.entries(ENTRIES).find(([, source]) => source === entry)?.[0];
  if (name === undefined || process.env.OUTLINE_FROM_SOURCES === "1") {
    const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    return ["--import", loader, entry];
  }
  return ["--enable-source-maps", join(ROOT, "dist", `${name}.js`)];
}

/** A service as `npm start` runs it (compiled; see `runnable`), its output kept. */
export class ServiceProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output = "";
  readonly #started = Date.now();

  /** `detached`: in a process group of its own (an instance killed with its whole tree). */
  constructor(entry: string, env: NodeJS.ProcessEnv, options: { detached?: boolean } = {}) {
    this.child = spawn(process.execPath, runnable(entry), {
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.detached ?? false,
    });
    this.child.stdout?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.child.stderr?.on("data", (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => resolve({ code, signal })),
    );
  }

  /**
   * Resolves once the output holds every marker; rejects with the output if the process exits
   * first or the deadline passes, saying how long it ran, its CPU and the machine's load.
   */
  async started(what: string, markers: readonly string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!markers.every((m) => this.output.includes(m))) {
      const exited = this.child.exitCode !== null || this.child.signalCode !== null;
      if (exited || Date.now() > deadline) {
        const how = exited
          ? `exited (${this.child.exitCode ?? this.child.signalCode})`
          : `still running, ${cpuUsed(this.child.pid)}`;
        throw new Error(
          `${what} did not start within ${Date.now() - this.#started} ms: ${how}; load average ${loadavg()
            .map((l) => l.toFixed(1))
            .join(" ")}; output:\n${this.output.slice(-4_000) || "(none)"}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Partitioned mode: the member id of the worker this process runs, from its start line. */
  memberId(): string | undefined {
    return /as member (\S+) holding/.exec(this.output)?.[1];
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}
