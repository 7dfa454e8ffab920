// Pipeline vs raw JetStream, side by side on one private nats-server, each consumer in its own
// process as in a deployment; the bench process plays the chat platform (it publishes) and, for
// ours, watches the KV bucket to see when the work is done. The limit: the same bytes published
// to a plain stream and consumed with an ack each by bench/support/raw-consumer.ts; the clock
// runs from the first publish until that process has acked them all. Ours: the same messages
// published to CHAT, consumed by the real thread worker (compiled as deployed, dist/thread-worker.js;
// default names, extractive summarizer in its threads), and counted done when every thread's KV snapshot
// reflects its last message with nothing pending (no summary job, cut or merge batch left: work
// done off the event loop is waited for too). Each consumer is started and ready before the clock
// starts, and stopped at the end. Three loads (VARIANTS):
// - young: 30 messages a thread over 1,000 threads at default settings: no summary is ever due;
//   what the worker costs per event (apply, save, snapshot, ack);
// - heavy: every message summarized and merged (HISTORY_TAIL 200,400, HISTORY_OUTLINE 2000,4000);
// - long: few threads of many messages at default settings: cuts, summaries and merges as a long
//   conversation makes them.
import { AckPolicy, jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { namesToEnv } from "../services/config/names.ts";
import { subjects } from "../services/nats/subjects.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import { workerMetricsSubject } from "../services/thread-worker/metrics-endpoint.ts";
import { BENCH_CONFIG_FILE } from "./support/bench-config.ts";
import { BenchChild, cpuSecondsOf } from "./support/child.ts";
import { perSecond, publishAll, roundRobin, type Outgoing } from "./support/load.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer, type BenchServer } from "./support/server.ts";
import { serviceEntry } from "./support/service-entry.ts";
import { SettledThreads } from "./support/settled.ts";
import { median } from "./support/timing.ts";
import { sleep } from "../services/util/wait.ts";

/** A load: messages over threads, and the settings the worker runs with. */
interface Variant {
  name: "young" | "heavy" | "long";
  messages: number;
  threads: number;
  settings: Record<string, string>;
}

const VARIANTS: Variant[] = [
  {
    name: "young",
    messages: Number(process.env.BENCH_E2E_MESSAGES ?? 30_000),
    threads: Number(process.env.BENCH_E2E_THREADS ?? 1_000),
    settings: {},
  },
  {
    name: "heavy",
    messages: Number(process.env.BENCH_E2E_HEAVY_MESSAGES ?? 6_000),
    threads: Number(process.env.BENCH_E2E_HEAVY_THREADS ?? 100),
    settings: { HISTORY_TAIL: "200,400", HISTORY_OUTLINE: "2000,4000" },
  },
  {
    name: "long",
    messages: Number(process.env.BENCH_E2E_LONG_MESSAGES ?? 8_000),
    threads: Number(process.env.BENCH_E2E_LONG_THREADS ?? 8),
    settings: {},
  },
];
/** BENCH_E2E_VARIANTS=heavy,long: only those. */
const CHOSEN = process.env.BENCH_E2E_VARIANTS?.split(",").map((v) => v.trim());
/** BENCH_E2E_TIMELINE=1: each round of ours prints when publishing ended and threads got done. */
const TIMELINE = process.env.BENCH_E2E_TIMELINE === "1";
/** How long a run may go without a snapshot write before it fails as stuck. */
const STALL_MS = 60_000;
/** How long the worker may take to answer for its metrics (busy with a heavy backlog). */
const METRICS_TIMEOUT_MS = 60_000;
/** Rounds per side: raw then ours on each of this many fresh servers. */
const ROUNDS = 3;

const RAW_CONSUMER = fileURLToPath(new URL("./support/raw-consumer.ts", import.meta.url));
/**
 * BENCH_BASE_ROOT=<checkout>: that checkout's thread worker runs too, each round on a fresh
 * server of its own, alternating with ours, to compare two versions in one run.
 */
const BASE_ROOT = process.env.BENCH_BASE_ROOT;

/** CPU milliseconds used since `before` (seconds, from /proc); undefined when unreadable. */
function cpuMsSince(pid: number | undefined, before: number | undefined): number | undefined {
  const after = cpuSecondsOf(pid);
  return before === undefined || after === undefined ? undefined : (after - before) * 1_000;
}

/**
 * The environment for a child: ours without any setting of the project's own (HISTORY_*,
 * OUTLINE_*, NATS_*), so the defaults apply, then the bench server's URL and names.
 */
function childEnv(server: BenchServer, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(HISTORY_|OUTLINE_|NATS_)/.test(key)) env[key] = value;
  }
  env.NATS_URL = server.url;
  env.OUTLINE_CONFIG = BENCH_CONFIG_FILE;
  Object.assign(env, namesToEnv(server.names));
  return { ...env, ...extra };
}

interface Measured {
  ms: number;
  /** CPU in the bench process (publisher, and for ours the KV watcher). */
  benchCpuMs: number;
  /** CPU in the consumer's process (raw consumer or thread worker). */
  childCpuMs: number | undefined;
  serverCpuMs: number | undefined;
}

/**
 * BENCH_E2E_FLOOR=<k>: each round pair also runs raw's consumer with k fenced writes before each
 * ack (raw-consumer.ts), on the same server: what the writes alone allow, beside raw and ours.
 * Heavy runs it with 3 unless set (0: off): its worker writes about 2.9 a message (1.9 HISTORY
 * nodes and an id claim), so the floor is its ceiling before any fold or summary.
 */
function floorWrites(variant: Variant): number {
  const set = process.env.BENCH_E2E_FLOOR;
  if (set !== undefined && set.trim() !== "") return Number(set);
  return variant.name === "heavy" ? 3 : 0;
}

/** The cores every process of a round shares: the CPU-bound ceiling below packs them all. */
const CORES = availableParallelism();

/**
 * Publish + consume-with-ack of `messages` on a plain stream: what JetStream itself allows; with
 * `writes`, each ack waits for that many fenced writes to a stream of their own (the floor).
 */
async function raw(
  server: BenchServer,
  round: number,
  variant: Variant,
  writes = 0,
): Promise<Measured> {
  const { messages: MESSAGES, threads: THREADS } = variant;
  const nc = await server.connect(`raw${round}`);
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  // The same duplicate window as CHAT: the server checks each Nats-Msg-Id in both.
  await jsm.streams.add({
    name: "RAW",
    subjects: ["raw.>"],
    storage: StorageType.File,
    duplicate_window: nanos(120_000),
  });
  // The durable exists before its process starts (it only binds to it).
  await jsm.consumers.add("RAW", { durable_name: "raw", ack_policy: AckPolicy.Explicit });
  // The floor's writes: one subject each, as HISTORY's nodes and the id index's keys.
  if (writes > 0) {
    await jsm.streams.add({
      name: "FLOOR",
      subjects: ["floor.>"],
      storage: StorageType.File,
      duplicate_window: nanos(120_000),
    });
  }
  // The floor (with writes) is a bound on the writes alone, measured cold as before.
  const warmUp = writes > 0 ? [] : warmLoad(variant, (t) => `raw.${t}.message.created`);
  const child = new BenchChild(
    `raw consumer ${round}${writes > 0 ? ` with ${writes} writes a message` : ""}`,
    RAW_CONSUMER,
    childEnv(server, {
      RAW_STREAM: "RAW",
      RAW_DURABLE: "raw",
      RAW_COUNT: String(MESSAGES),
      RAW_WARM: String(warmUp.length),
      RAW_WRITES: String(writes),
      RAW_WRITE_PREFIX: "floor",
    }),
  );
  try {
    const load = roundRobin(MESSAGES, THREADS, (t) => `raw.${t}.message.created`);
    await child.waitFor((line) => line === "ready");
    if (warmUp.length > 0) {
      const warm = child.waitFor((line) => line === "warm", 300_000);
      await publishAll(js, warmUp);
      await warm;
    }
    const done = child.waitFor((line) => line.startsWith("done "), 300_000);
    done.catch(() => {}); // awaited below; a failure while publishing must not go unhandled
    const serverCpuBefore = cpuSecondsOf(server.pid);
    const childCpuBefore = child.cpuSeconds();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await publishAll(js, load);
    await done;
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      ms,
      benchCpuMs: (cpu.user + cpu.system) / 1_000,
      childCpuMs: cpuMsSince(child.pid, childCpuBefore),
      serverCpuMs: cpuMsSince(server.pid, serverCpuBefore),
    };
  } finally {
    await child.stop();
    await jsm.streams.delete("RAW");
    if (writes > 0) await jsm.streams.delete("FLOOR");
  }
}

/** The sum of a Prometheus text's samples of `name` whose labels contain `having`. */
function sampleSum(text: string, name: string, having = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || (line[name.length] !== " " && line[name.length] !== "{"))
      continue;
    if (!line.includes(having)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

/**
 * BENCH_E2E_WARM=<share>: before the clock, each consumer handles this share of the variant's
 * messages on threads of their own (0.5 by default; 0: a cold process). A deployed worker runs for
 * days: a cold one's first seconds are mostly V8 compiling its hot paths (heavy: over 1.5× the
 * worker CPU of a warm round, with BENCH_E2E_WARM=0), which a throughput figure is not about.
 */
const WARM_SHARE = Number(process.env.BENCH_E2E_WARM ?? 0.5);

/** The warm-up: the variant's shape on threads named apart (`w…`), on subjects of `subject`. */
function warmLoad(variant: Variant, subject: (thread: string) => string): Outgoing[] {
  const messages = Math.round(variant.messages * WARM_SHARE);
  if (messages <= 0) return [];
  return roundRobin(messages, variant.threads, subject, (t) => `w${t}`);
}

/** How long the worker's writes must stay still after the warm-up (its saves wait up to 5 s). */
const QUIET_MS = 1_200;
const QUIET_MAX_MS = 10_000;

/**
 * The worker's counters once it has stopped writing: saves and snapshots put off by the
 * warm-up's last bursts are done before the clock starts, not during the timed load.
 */
async function quietMetrics(nc: NatsConnection, server: BenchServer): Promise<string> {
  const writes = (text: string) =>
    sampleSum(text, METRIC.stateSaves) + sampleSum(text, METRIC.snapshotWrites);
  const until = performance.now() + QUIET_MAX_MS;
  let metrics = await workerMetrics(nc, server);
  for (;;) {
    await sleep(QUIET_MS);
    const next = await workerMetrics(nc, server);
    if (writes(next) === writes(metrics) || performance.now() > until) return next;
    metrics = next;
  }
}

/** The worker's own counters, as the prompt-builder's /metrics scrapes them. */
async function workerMetrics(nc: NatsConnection, server: BenchServer): Promise<string> {
  const reply = await nc.request(workerMetricsSubject(server.names), "", {
    timeout: METRICS_TIMEOUT_MS,
  });
  return new TextDecoder().decode(reply.data);
}

/** The same load through the thread worker, done when every snapshot shows its last message. */
async function ours(
  server: BenchServer,
  variant: Variant,
  workerPath: string,
): Promise<Measured & { calls: number; perMessage: string; summarizerCpuMs: number }> {
  const { messages: MESSAGES, threads: THREADS } = variant;
  // BENCH_WORKER_PROF=<dir>: the worker child writes a V8 CPU profile there when it stops (the
  // whole run, set-up included; summarise it by self time per function).
  const profDir = process.env.BENCH_WORKER_PROF;
  const nodeArgs = profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
  const worker = new BenchChild(
    "thread worker",
    workerPath,
    childEnv(server, variant.settings),
    nodeArgs,
  );
  try {
    const nc = await server.connect("publisher");
    const js = jetstream(nc);
    const kv = await new Kvm(js).open(server.names.kvBucket);
    const s = subjects(server.names);
    const load = roundRobin(MESSAGES, THREADS, (t) => s.messageCreated(t));
    // Its start line is written once its consumer pulls from CHAT.
    await worker.waitFor((line) => line.includes(" consuming "));

    const settled = new SettledThreads();
    const watch = await kv.watch();
    const watching = (async () => {
      for await (const e of watch) settled.observe(e);
    })();
    // The worker dying mid-run must fail the bench, not leave it waiting.
    const died = worker.exited.then(() => {
      throw new Error(`the thread worker exited during the run:\n${worker.output()}`);
    });
    died.catch(() => {});
    let stallTimer: NodeJS.Timeout | undefined;
    // A run that stops writing before every thread is done fails, naming what it waits for.
    const stalled = () =>
      new Promise<never>((_, reject) => {
        const check = () => {
          if (performance.now() - settled.lastPut < STALL_MS) {
            stallTimer = setTimeout(check, 1_000);
            return;
          }
          const { count, named } = settled.waiting();
          reject(
            new Error(
              `no snapshot written for ${STALL_MS / 1000} s with ${count} threads not done: ${named.join("; ")}`,
            ),
          );
        };
        check();
      });
    /** Publishes `outgoing` and resolves once every thread of it is done. */
    const runLoad = async (outgoing: Outgoing[], onPublished: () => void = () => {}) => {
      const seqs = await publishAll(js, outgoing);
      onPublished();
      const targets = new Map<string, number>();
      for (const [i, m] of outgoing.entries()) targets.set(m.thread, seqs[i] as number);
      try {
        await Promise.race([settled.until(targets), died, stalled()]);
      } finally {
        clearTimeout(stallTimer);
      }
    };
    const warmUp = warmLoad(variant, (t) => s.messageCreated(t));
    if (warmUp.length > 0) await runLoad(warmUp);
    // What the warm-up wrote is not the timed load's: its counters are taken off below.
    const metricsBefore = warmUp.length > 0 ? await quietMetrics(nc, server) : "";

    const serverCpuBefore = cpuSecondsOf(server.pid);
    const workerCpuBefore = worker.cpuSeconds();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    let publishedAt = started;
    await profiled(() => runLoad(load, () => (publishedAt = performance.now())));
    const ms = performance.now() - started;
    if (TIMELINE) {
      const { doneAt } = settled;
      const at = (q: number) => doneAt[Math.min(doneAt.length - 1, Math.floor(q * doneAt.length))];
      const rel = (t: number | undefined) => (t === undefined ? "?" : (t - started).toFixed(0));
      console.log(
        `  timeline (ms from first publish): published ${rel(publishedAt)}, threads done p10 ${rel(at(0.1))}, p50 ${rel(at(0.5))}, p90 ${rel(at(0.9))}, last ${rel(doneAt.at(-1))}`,
      );
    }
    const cpu = process.cpuUsage(cpuBefore);
    const serverCpuMs = cpuMsSince(server.pid, serverCpuBefore);
    const childCpuMs = cpuMsSince(worker.pid, workerCpuBefore);
    watch.stop();
    await watching;
    const metrics = await workerMetrics(nc, server);
    const timed = (name: string, having = "") =>
      sampleSum(metrics, name, having) - sampleSum(metricsBefore, name, having);
    const perMessage = (
      [
        ["gap reads", METRIC.gapReads],
        ["state saves", METRIC.stateSaves],
        ["snapshot writes", METRIC.snapshotWrites],
      ] as const
    )
      .map(([what, name]) => `${(timed(name) / MESSAGES).toFixed(2)} ${what}`)
      .join(", ");
    return {
      ms,
      // Summary jobs that went to the summarizer (not rebuilt from HISTORY or free).
      calls: timed(METRIC.summaries, 'source="model"'),
      perMessage,
      summarizerCpuMs: timed(METRIC.summarizerCpu) * 1_000,
      benchCpuMs: (cpu.user + cpu.system) / 1_000,
      childCpuMs,
      serverCpuMs,
    };
  } finally {
    await worker.stop();
  }
}

const cpuS = (ms: number | undefined) => (ms === undefined ? "?" : (ms / 1000).toFixed(1));

export async function run(): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  for (const variant of VARIANTS) {
    if (CHOSEN && !CHOSEN.includes(variant.name)) continue;
    console.log(
      `  -- ${variant.name}: ${variant.messages} messages over ${variant.threads} threads${
        Object.keys(variant.settings).length > 0
          ? ` (${Object.entries(variant.settings)
              .map(([k, v]) => `${k}=${v}`)
              .join(", ")})`
          : ""
      }`,
    );
    Object.assign(figures, await runVariant(variant));
  }
  return figures;
}

/** One load, raw and ours alternating on fresh servers; its figures (young's keep their names). */
async function runVariant(variant: Variant): Promise<Record<string, number>> {
  const MESSAGES = variant.messages;
  // Raw and ours alternate (raw, ours, three times) and each keeps its best round: the machine
  // is shared, and other work on it only ever adds time, so a side's fastest round is the closest
  // to what it costs itself. Both sides get as many rounds: the best of three against the best of
  // two favours the side with more draws on a noisy host. The headline is the median of the
  // pairs' ratios (each pair ran at the same time, under the same load); the best rounds' ratio
  // is printed beside it. Each round pair has a fresh nats-server (same settings): a second
  // worker on the first one's consumer would measure a restart (its first event of each new
  // thread reads CHAT for a gap), not the steady state.
  const raws: Measured[] = [];
  const floors: Measured[] = [];
  const floorEach = floorWrites(variant);
  const ourRounds: Awaited<ReturnType<typeof ours>>[] = [];
  const baseRounds: Awaited<ReturnType<typeof ours>>[] = [];
  const baseRound = async (base: string) => {
    const server = await startBenchServer("e2e-base");
    try {
      baseRounds.push(await ours(server, variant, base));
    } finally {
      await server.stop();
    }
  };
  // Both workers compiled, as deployed (support/service-entry.ts), before any clock starts.
  const worker = await serviceEntry("thread-worker");
  const base = BASE_ROOT ? await serviceEntry("thread-worker", BASE_ROOT) : undefined;
  for (let round = 1; round <= ROUNDS; round++) {
    // The base goes first every other round: neither side always follows the other.
    if (base && round % 2 === 1) await baseRound(base);
    const server = await startBenchServer("e2e");
    try {
      raws.push(await raw(server, round, variant));
      ourRounds.push(await ours(server, variant, worker));
      // After ours: raw and ours stay next to each other, each on the server as it was before.
      if (floorEach > 0) floors.push(await raw(server, round, variant, floorEach));
    } finally {
      await server.stop();
    }
    if (base && round % 2 === 0) await baseRound(base);
  }
  const best = <T extends Measured>(xs: T[]): T =>
    xs.reduce((a, b) => (b.ms < a.ms ? b : a), xs[0] as T);
  const rawBest = best(raws);
  const our = best(ourRounds);
  const rawRate = perSecond(MESSAGES, rawBest.ms);
  const ourRate = perSecond(MESSAGES, our.ms);
  const bestRatio = Number((ourRate / rawRate).toFixed(3));
  const rates = (xs: Measured[]) => xs.map((x) => perSecond(MESSAGES, x.ms)).join(", ");
  const baseRate = baseRounds.length > 0 ? perSecond(MESSAGES, best(baseRounds).ms) : undefined;
  if (baseRate !== undefined) {
    console.log(
      `  base ${BASE_ROOT}: rounds (msg/s) ${rates(baseRounds)}; best ${baseRate} msg/s; ours/base ${(ourRate / baseRate).toFixed(3)}`,
    );
    const cpus = (xs: Measured[]) => xs.map((x) => cpuS(x.childCpuMs)).join(", ");
    console.log(`  worker CPU s per round: ours ${cpus(ourRounds)}; base ${cpus(baseRounds)}`);
    // The writes each side makes per message: a different save or snapshot rate is a cost of its own.
    const writes = (xs: { perMessage: string }[]) => xs.map((x) => x.perMessage).join(" | ");
    console.log(`  per message, per round: ours ${writes(ourRounds)}; base ${writes(baseRounds)}`);
  }
  const pairRatios = ourRounds.map((o, i) => (raws[i] as Measured).ms / o.ms).sort((a, b) => a - b);
  const pairMedian = Number(median(pairRatios).toFixed(3));
  // The share of the worker process's CPU (threads included) its summarizer used, per round.
  const shares = ourRounds.map((o) =>
    o.childCpuMs === undefined || o.childCpuMs === 0 ? NaN : o.summarizerCpuMs / o.childCpuMs,
  );
  const share = median(shares);
  console.log(
    `  rounds (msg/s): raw ${rates(raws)}; ours ${rates(ourRounds)}; ratio of each pair ${pairRatios.map((r) => r.toFixed(3)).join(", ")} (median ${pairMedian}, the headline)`,
  );
  console.log(
    `  best rounds: raw JetStream ${rawRate} msg/s (${(rawBest.ms / 1000).toFixed(1)} s), ` +
      `ours ${ourRate} msg/s (${(our.ms / 1000).toFixed(1)} s), ratio ${bestRatio}; ${our.calls} summaries built`,
  );
  // All share the machine's cores (and other work on it): CPU time is the steadier figure.
  console.log(
    `  raw used ${cpuS(rawBest.benchCpuMs)} CPU s in this process (publisher), ` +
      `${cpuS(rawBest.childCpuMs)} CPU s in the consumer process and ${cpuS(rawBest.serverCpuMs)} CPU s in nats-server`,
  );
  console.log(
    `  ours used ${cpuS(our.benchCpuMs)} CPU s in this process (publisher, KV watcher), ` +
      `${cpuS(our.childCpuMs)} CPU s in the thread worker process (${cpuS(our.summarizerCpuMs)} s of it summarizing; median share over rounds ${(share * 100).toFixed(1)}%) and ${cpuS(our.serverCpuMs)} CPU s in nats-server` +
      `; per message: ${our.perMessage}`,
  );
  // What the CPU a round used allows at best: every process's CPU (publisher, worker, server)
  // packed on all cores, against raw's rate in the same pair. A goal above it cannot be met by
  // scheduling; the work itself must shrink.
  // (cores × messages / CPU s) over (messages / raw's s): the messages cancel.
  const ceilings = ourRounds.map((o, i) => {
    const used = o.benchCpuMs + (o.childCpuMs ?? NaN) + (o.serverCpuMs ?? NaN);
    return (CORES * (raws[i] as Measured).ms) / used;
  });
  const ceiling = median(ceilings.filter((c) => Number.isFinite(c)));
  if (Number.isFinite(ceiling)) {
    console.log(
      `  CPU-bound ceiling: all the CPU each round of ours used, packed on ${CORES} cores, allows ` +
        `${ceilings.map((c) => c.toFixed(3)).join(", ")} of raw (median ${ceiling.toFixed(3)})`,
    );
  }
  const prefix = variant.name === "young" ? "e2e" : `e2e.${variant.name}`;
  let floorMedian: number | undefined;
  if (floors.length > 0) {
    const ratios = floors.map((f, i) => (raws[i] as Measured).ms / f.ms).sort((a, b) => a - b);
    floorMedian = Number(median(ratios).toFixed(3));
    console.log(
      `  floor, raw with ${floorEach} fenced writes a message: rounds (msg/s) ${rates(floors)}; ` +
        `ratio to raw of each pair ${ratios.map((r) => r.toFixed(3)).join(", ")} (median ${floorMedian}); ` +
        `consumer CPU s ${floors.map((f) => cpuS(f.childCpuMs)).join(", ")} (raw ${raws.map((r) => cpuS(r.childCpuMs)).join(", ")})`,
    );
  }
  const figures: Record<string, number> = {
    [`${prefix}.messages`]: MESSAGES,
    [`${prefix}.threads`]: variant.threads,
    [`${prefix}.pair_ratio_median`]: pairMedian,
    [`${prefix}.ratio`]: bestRatio,
    [`${prefix}.raw_msgs_per_sec`]: rawRate,
    [`${prefix}.ours_msgs_per_sec`]: ourRate,
    [`${prefix}.summaries`]: our.calls,
    [`${prefix}.summarizing_cpu_share`]: Number(share.toFixed(3)),
    [`${prefix}.raw_bench_cpu_ms`]: Math.round(rawBest.benchCpuMs),
    [`${prefix}.ours_bench_cpu_ms`]: Math.round(our.benchCpuMs),
  };
  const optional: [string, number | undefined][] = [
    [`${prefix}.raw_consumer_cpu_ms`, rawBest.childCpuMs],
    [`${prefix}.raw_server_cpu_ms`, rawBest.serverCpuMs],
    [`${prefix}.ours_worker_cpu_ms`, our.childCpuMs],
    [`${prefix}.ours_summarizer_cpu_ms`, our.summarizerCpuMs],
    [`${prefix}.ours_server_cpu_ms`, our.serverCpuMs],
  ];
  for (const [key, value] of optional) if (value !== undefined) figures[key] = Math.round(value);
  if (baseRate !== undefined) figures[`${prefix}.base_msgs_per_sec`] = baseRate;
  if (floorMedian !== undefined) figures[`${prefix}.floor_pair_ratio_median`] = floorMedian;
  if (Number.isFinite(ceiling)) figures[`${prefix}.cpu_bound_ratio`] = Number(ceiling.toFixed(3));
  return figures;
}
