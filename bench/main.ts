// `npm run bench` runs every benchmark; `npm run bench -- core` one of them. Figures are printed
// and written to bench/results.json with the machine they were measured on.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { performance } from "node:perf_hooks";

type Bench = () => Promise<Record<string, number>>;

const benches: Record<string, () => Promise<Bench>> = {
  core: async () => (await import("./core.ts")).run,
  summarizer: async () => (await import("./summarizer.ts")).run,
  cost: async () => (await import("./cost.ts")).run,
  e2e: async () => (await import("./e2e.ts")).run,
  replay: async () => (await import("./replay.ts")).run,
  prompt: async () => (await import("./prompt.ts")).run,
  scale: async () => (await import("./scale.ts")).run,
};

function natsVersion(): string {
  try {
    return execFileSync("nats-server", ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return "not installed";
  }
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
    const load = benches[name];
    if (!load) continue;
    const t = performance.now();
    results[name] = await (await load())();
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

await main();
