// `npm run bench` runs every benchmark; `npm run bench -- core` one of them. Figures are printed
// and written to bench/results.json with the machine they were measured on. Each benchmark runs
// in a Node process of its own, so one's heap and JIT state do not colour the next one's figures
// (latency tails most of all: the prompt p99 after the others in one process was about twice
// its figure alone).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

type Bench = () => Promise<Record<string, number>>;

const benches: Record<string, () => Promise<Bench>> = {
  core: async () => (await import("./core.ts")).run,
  summarizer: async () => (await import("./summarizer.ts")).run,
  fidelity: async () => (await import("./fidelity.ts")).run,
  "fidelity-real": async () => (await import("./fidelity-real.ts")).run,
  cost: async () => (await import("./cost.ts")).run,
  e2e: async () => (await import("./e2e.ts")).run,
  instances: async () => (await import("./instances.ts")).run,
  replay: async () => (await import("./replay.ts")).run,
  prompt: async () => (await import("./prompt.ts")).run,
  scale: async () => (await import("./scale.ts")).run,
  threads: async () => (await import("./threads.ts")).run,
  explorer: async () => (await import("./explorer.ts")).run,
  search: async () => (await import("./search.ts")).run,
  cli: async () => (await import("./cli.ts")).run,
};

function natsVersion(): string {
  try {
    return execFileSync("nats-server", ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return "not installed";
  }
}

/** Runs one benchmark in a Node of its own (this file, told where to write its figures). */
async function inChild(name: string): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), "outline-bench-result-"));
  const file = join(dir, "figures.json");
  try {
    const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const child = spawn(
      process.execPath,
      ["--import", loader, fileURLToPath(import.meta.url), name],
      { env: { ...process.env, [RESULT_FILE]: file }, stdio: "inherit" },
    );
    const killChild = () => child.kill("SIGKILL");
    process.once("exit", killChild);
    const code = await new Promise<number | string>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (exitCode, signal) => resolve(signal ?? exitCode ?? 1));
    });
    process.removeListener("exit", killChild);
    if (code !== 0) {
      throw new Error(
        `benchmark ${name} failed (${code}); its output is above; rerun it alone with 'npm run bench -- ${name}'`,
      );
    }
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, number>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Set in a benchmark's own process: where it writes its figures. */
const RESULT_FILE = "BENCH_RESULT_FILE";

async function runChild(name: string, file: string): Promise<void> {
  const load = benches[name];
  if (!load) throw new Error(`unknown benchmark ${name}`);
  writeFileSync(file, JSON.stringify(await (await load())()));
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith("-"));
  const unknown = asked.filter((name) => !(name in benches));
  if (unknown.length > 0) {
    console.error(
      `unknown benchmark ${unknown.join(", ")}; choose from: ${Object.keys(benches).join(", ")}`,
    );
    process.exit(2);
  }
  const names = asked.length > 0 ? asked : Object.keys(benches);
  const machine = {
    cores: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    natsServer: natsVersion(),
  };
  console.log(
    `machine: ${machine.cores} cores (${machine.cpu}), ${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.natsServer}`,
  );
  const results: Record<string, Record<string, number>> = {};
  const seconds: Record<string, number> = {};
  const started = performance.now();
  for (const name of names) {
    console.log(`\n== ${name}`);
    const t = performance.now();
    results[name] = await inChild(name);
    seconds[name] = Math.round((performance.now() - t) / 100) / 10;
    console.log(`  (${seconds[name]} s)`);
  }
  const total = Math.round((performance.now() - started) / 100) / 10;
  console.log("\n| benchmark | figure | value |\n|---|---|---|");
  for (const [name, figures] of Object.entries(results)) {
    for (const [key, value] of Object.entries(figures))
      console.log(`| ${name} | ${key} | ${value} |`);
  }
  const file = new URL("./results.json", import.meta.url);
  writeFileSync(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), machine, seconds: { ...seconds, total }, results }, null, 2)}\n`,
  );
  console.log(`\n${total} s in all; written to bench/results.json`);
}

const resultFile = process.env[RESULT_FILE];
if (resultFile) {
  await runChild(process.argv[2] ?? "", resultFile);
  // Whatever a benchmark left open (a timer, a socket) does not keep its process.
  process.exit(0);
} else {
  await main();
}
