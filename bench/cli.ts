// The command line (issue 16): how long `outline --help` takes to start against a bare `node -e 0`
// (the goal: at most max(0.3 s, 6× bare node)), and `outline import` of 20,000 messages against
// a windowed loop of `jetstream().publish` (the plain way), both into a private nats-server in
// the same run; then with the worker's id index there, a new file and the first one again. Each
// start is timed 10 times, alternating, and the medians compared.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { openAppliedIds } from "../services/cli/applied-ids.ts";
import { openDeletedThreads } from "../services/cli/deleted-threads.ts";
import { importLines } from "../services/cli/import.ts";
import { ensureWorkerBuckets } from "../services/nats/buckets.ts";
import { claimMessageId } from "../services/nats/id-index.ts";
import { startBenchServer } from "./support/server.ts";
import { median } from "./support/timing.ts";

const ROOT = join(import.meta.dirname, "..");
const RUNS = 10;
const MESSAGES = 20_000;

function timed(args: string[]): number {
  const t = performance.now();
  execFileSync(process.execPath, args, {
    cwd: ROOT,
    stdio: "ignore",
    env: { ...process.env, OUTLINE_FROM_SOURCES: "" },
  });
  return performance.now() - t;
}

function lines(prefix: string): string[] {
  return Array.from({ length: MESSAGES }, (_, i) =>
    JSON.stringify({
      id: `${prefix}-${i}`,
      thread: `${prefix}-${i % 100}`,
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      from: i % 2 === 0 ? "ana" : "bo",
      role: "user",
      text: `message ${i}: the launch moves to Tuesday, budget 4,200 EUR, ticket OPS-${i}`,
    }),
  );
}

export async function run(): Promise<Record<string, number>> {
  // The build the CLI runs: made (or found fresh) before anything is timed.
  timed(["services/cli/bin.js", "--help"]);
  const bare: number[] = [];
  const help: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    bare.push(timed(["-e", "0"]));
    help.push(timed(["services/cli/bin.js", "--help"]));
  }
  const bareMs = median(bare);
  const helpMs = median(help);
  console.log(
    `  outline --help ${helpMs.toFixed(0)} ms, node -e 0 ${bareMs.toFixed(0)} ms (medians of ${RUNS}); goal ≤ ${Math.max(300, 6 * bareMs).toFixed(0)} ms`,
  );

  const server = await startBenchServer("cli");
  try {
    const nc = await server.connect("import");
    const js = jetstream(nc);
    const encoder = new TextEncoder();
    let t = performance.now();
    const plain = lines("plain");
    const inFlight = new Set<Promise<unknown>>();
    for (const line of plain) {
      const { thread, id } = JSON.parse(line) as { thread: string; id: string };
      const p = js
        .publish(`${server.names.chatPrefix}.${thread}.message.created`, encoder.encode(line), {
          msgID: id,
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= 512) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    const plainRate = MESSAGES / ((performance.now() - t) / 1000);

    const text = `${lines("import").join("\n")}\n`;
    t = performance.now();
    const result = await importLines({
      nc,
      names: server.names,
      input: (async function* () {
        yield await Promise.resolve(text);
      })(),
    });
    const importRate = result.published / ((performance.now() - t) / 1000);
    const stored = (await (await jetstreamManager(nc)).streams.info(server.names.chatStream)).state
      .messages;
    console.log(
      `  import ${importRate.toFixed(0)} msg/s, jetstream().publish ${plainRate.toFixed(0)} msg/s (${MESSAGES} each, ${stored} stored)`,
    );

    // With the worker's id index there, holding every message of the first file (as after the
    // worker applied it): a new file asks once per thread (its snapshot), the first file again
    // once per line.
    const jsm = await jetstreamManager(nc);
    const { ids, snapshots } = await ensureWorkerBuckets(js, jsm, server.names);
    // Each thread's snapshot as after cuts (the tail's ids aside, all in the index): every line
    // of the first file is looked up in the index, the slowest case.
    for (let t = 0; t < 100; t++) {
      const thread = `import-${t}`;
      await snapshots.put(
        thread,
        JSON.stringify({ thread, boundary: 1, complete: true, tail: [] }),
      );
    }
    const claims = lines("import").map(
      (line) => JSON.parse(line) as { thread: string; id: string },
    );
    for (let i = 0; i < claims.length; i += 512) {
      await Promise.all(
        claims.slice(i, i + 512).map((m, k) => claimMessageId(ids, m.thread, m.id, i + k + 1)),
      );
    }
    const indexed = async (prefix: string) => {
      const applied = await openAppliedIds(nc, server.names);
      if (!applied) throw new Error("the id index is not readable");
      // As `outline import` runs: the worker's tombstones too (its actors bucket is there).
      const deleted = await openDeletedThreads(nc, server.names);
      if (!deleted) throw new Error("the worker's actor records are not readable");
      const body = `${lines(prefix).join("\n")}\n`;
      const start = performance.now();
      const r = await importLines({
        nc,
        names: server.names,
        input: (async function* () {
          yield await Promise.resolve(body);
        })(),
        applied,
        deleted,
      }).finally(() => {
        applied.close();
        deleted.close();
      });
      return { result: r, rate: (r.published + r.applied) / ((performance.now() - start) / 1000) };
    };
    const fresh = await indexed("fresh");
    const again = await indexed("import");
    if (fresh.result.published !== MESSAGES || again.result.applied !== MESSAGES) {
      throw new Error(
        `expected ${MESSAGES} published and ${MESSAGES} applied, got ${fresh.result.published} and ${again.result.applied}`,
      );
    }
    console.log(
      `  with the id index: a new file ${fresh.rate.toFixed(0)} msg/s (${(fresh.rate / importRate).toFixed(2)} of the import above), the first file again ${again.rate.toFixed(0)} lines/s (none published)`,
    );
    return {
      helpMs: Math.round(helpMs),
      bareNodeMs: Math.round(bareMs),
      helpOverBare: Math.round((helpMs / bareMs) * 100) / 100,
      importMsgPerS: Math.round(importRate),
      plainPublishMsgPerS: Math.round(plainRate),
      importOverPlain: Math.round((importRate / plainRate) * 100) / 100,
      importIndexedMsgPerS: Math.round(fresh.rate),
      reimportAppliedLinesPerS: Math.round(again.rate),
    };
  } finally {
    await server.stop();
  }
}
