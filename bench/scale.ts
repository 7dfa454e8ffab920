// Scaling through the real thread worker (in this process, instant summarizer, private
// nats-server). One thread of 100,000 messages (BENCH_SCALE_MESSAGES): time per message in the
// windows ending at 1k, 10k and 100k (flat means O(1) amortised work per message, I/O included). Then 10,000 threads with one live actor each: heap and RSS per actor, and what
// passivation gives back.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { performance } from "node:perf_hooks";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { subjects } from "../services/nats/subjects.ts";
import { consoleLogger, quietLogger } from "../services/thread-worker/log.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import { startThreadWorker } from "../services/thread-worker/worker.ts";
import { InstantSummarizer } from "./support/instant.ts";
import { perSecond, publishAll, roundRobin } from "./support/load.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer, type BenchServer } from "./support/server.ts";
import { sleep } from "../services/util/wait.ts";

// About 0.3 ms per message on one thread through the worker: 100,000 take under a minute of the
// 10 `npm run bench` has.
const MESSAGES = Number(process.env.BENCH_SCALE_MESSAGES ?? 100_000);
const THREADS = Number(process.env.BENCH_SCALE_THREADS ?? 10_000);
const CHECKPOINTS = [...new Set([1_000, 10_000, 100_000, MESSAGES])]
  .filter((n) => n <= MESSAGES && n % 1_000 === 0)
  .sort((a, b) => a - b);
const WINDOW = 1_000;

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Heap and RSS after a full collection, in bytes. */
function settledMemory(): { heap: number; rss: number } {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

async function waitUntil(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`bench scale: timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * One thread, `MESSAGES` long, published a window at a time to a running worker; each window is
 * timed from its first publish until the snapshot shows it applied with nothing pending (no job,
 * no cut, no merge). Windows keep the summaries' backlog bounded: published all at once, the
 * instant summaries fall behind the chat events and the state grows with the backlog.
 */
async function oneLongThread(server: BenchServer): Promise<Record<string, number>> {
  const nc = await server.connect("long");
  const js = jetstream(nc);
  const s = subjects(server.names);
  const worker = await startThreadWorker({
    nc,
    names: server.names,
    settings: DEFAULT_SETTINGS,
    summarizer: new InstantSummarizer(),
    log: process.env.BENCH_LOG ? consoleLogger("scale-worker") : quietLogger,
  });
  const kv = await new Kvm(js).open(server.names.kvBucket);
  let latest: OutlineSnapshot | undefined;
  const watch = await kv.watch({ key: "long" });
  const watching = (async () => {
    for await (const e of watch) if (e.operation === "PUT") latest = e.json<OutlineSnapshot>();
  })();
  const settled = (count: number) =>
    latest !== undefined &&
    latest.count === count &&
    latest.pending.jobs === 0 &&
    latest.pending.cuts === 0 &&
    !latest.pending.merging;

  const figures: Record<string, number> = {};
  const started = performance.now();
  const cpu = process.cpuUsage();
  await profiled(async () => {
    for (let done = 0; done < MESSAGES; done += WINDOW) {
      const load = roundRobin(
        WINDOW,
        1,
        () => s.messageCreated("long"),
        () => "long",
        done,
      );
      const t = performance.now();
      await publishAll(js, load);
      await waitUntil(
        `messages up to ${done + WINDOW} to settle`,
        () => settled(done + WINDOW),
        120_000,
      );
      const n = done + WINDOW;
      if (CHECKPOINTS.includes(n)) {
        const us = ((performance.now() - t) * 1000) / WINDOW;
        figures[`scale.us_per_message_at_${n / 1000}k`] = Number(us.toFixed(1));
        console.log(
          `  one thread at ${String(n).padStart(7)} messages: ${us.toFixed(1)} µs/message (window of ${WINDOW}); outline ${latest?.bytes ?? 0} B, ${latest?.lines.length ?? 0} lines, tail ${latest?.tail.length ?? 0}`,
        );
      }
    }
  });
  const used = process.cpuUsage(cpu);
  figures["scale.one_thread_cpu_us_per_message"] = Math.round((used.user + used.system) / MESSAGES);
  figures["scale.one_thread_msgs_per_sec"] = perSecond(MESSAGES, performance.now() - started);
  // The writes behind each message: the actor state (whole outline and nodes) and the snapshot.
  figures["scale.state_saves_per_message"] = Number(
    (worker.metrics.get(METRIC.stateSaves) / MESSAGES).toFixed(3),
  );
  figures["scale.snapshot_writes_per_message"] = Number(
    (worker.metrics.get(METRIC.snapshotWrites) / MESSAGES).toFixed(3),
  );
  console.log(
    `  ${figures["scale.state_saves_per_message"]} state saves and ${figures["scale.snapshot_writes_per_message"]} snapshot writes per message`,
  );
  watch.stop();
  await watching;
  await worker.stop();
  return figures;
}

/** `THREADS` threads of one message each, every actor live; then all passivated. */
async function manyThreads(server: BenchServer): Promise<Record<string, number>> {
  const nc = await server.connect("many");
  const js = jetstream(nc);
  const s = subjects(server.names);
  const load = roundRobin(
    THREADS,
    THREADS,
    (t) => s.messageCreated(t),
    (t) => `a${t}`,
  );
  const worker = await startThreadWorker({
    nc,
    names: server.names,
    settings: DEFAULT_SETTINGS,
    summarizer: new InstantSummarizer(),
    log: quietLogger,
    idleMs: 3_600_000, // no passivation until we ask for it
  });
  const kv = await new Kvm(js).open(server.names.kvBucket);
  const written = new Set<string>();
  const watch = await kv.watch();
  const watching = (async () => {
    for await (const e of watch) if (e.key.startsWith("a")) written.add(e.key);
  })();

  const before = settledMemory();
  await publishAll(js, load);
  await waitUntil("every thread's snapshot", () => written.size >= THREADS, 600_000);
  const actors = worker.registry.size;
  const peak = settledMemory();
  // The sweeper's own call with an idle time of zero: every actor persists and stops.
  worker.registry.sweep(0);
  await waitUntil(
    "every actor to passivate",
    () => {
      worker.registry.sweep(0);
      return worker.registry.size === 0;
    },
    120_000,
  ).catch((err: unknown) => {
    throw new Error(
      `${(err as Error).message}; still live: ${worker.registry.threads().slice(0, 5).join(", ")}`,
    );
  });
  await sleep(200);
  const after = settledMemory();
  watch.stop();
  await watching;
  await worker.stop();

  const kb = (b: number) => Math.round(b / 1024);
  const figures = {
    "scale.actors": actors,
    "scale.heap_kb_per_actor": Number(((peak.heap - before.heap) / 1024 / actors).toFixed(1)),
    "scale.rss_kb_per_actor": Number(((peak.rss - before.rss) / 1024 / actors).toFixed(1)),
    "scale.heap_mb_idle": Math.round(before.heap / 2 ** 20),
    "scale.heap_mb_peak": Math.round(peak.heap / 2 ** 20),
    "scale.heap_mb_passivated": Math.round(after.heap / 2 ** 20),
    "scale.rss_mb_idle": Math.round(before.rss / 2 ** 20),
    "scale.rss_mb_peak": Math.round(peak.rss / 2 ** 20),
    "scale.rss_mb_passivated": Math.round(after.rss / 2 ** 20),
  };
  console.log(
    `  ${actors} live actors: +${kb(peak.heap - before.heap)} KB heap, +${kb(peak.rss - before.rss)} KB RSS → ${figures["scale.heap_kb_per_actor"]} KB heap / ${figures["scale.rss_kb_per_actor"]} KB RSS per actor`,
  );
  console.log(
    `  heap ${figures["scale.heap_mb_idle"]} MB idle → ${figures["scale.heap_mb_peak"]} MB with ${actors} actors → ${figures["scale.heap_mb_passivated"]} MB passivated; RSS ${figures["scale.rss_mb_idle"]} → ${figures["scale.rss_mb_peak"]} → ${figures["scale.rss_mb_passivated"]} MB`,
  );
  return figures;
}

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("scale");
  try {
    // Many threads first: the long thread's worker then starts on a consumer with nothing left.
    const many = await manyThreads(server);
    return { ...(await oneLongThread(server)), ...many };
  } finally {
    await server.stop();
  }
}
