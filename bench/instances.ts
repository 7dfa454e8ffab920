// One instance against two (issue 15, docs/scale-out.md): the heavy load of the issue (200
// threads × 60 messages, tail 200,400, outline 2000,4000, so nearly every message is
// summarized) through one worker in single mode, then through two partitioned workers on a
// server with the partition mapping, each on a fresh nats-server. The clock runs from the first
// publish until every thread is settled: its snapshot shows its last message and no work
// outstanding (summaries, cuts, a merge batch), so each run is clocked over the same work, all
// of it. Workers are started, have split the partitions, and are warmed (BENCH_INSTANCES_WARM,
// default 6,000 messages on other threads, settled so) before it starts: a fresh process
// compiles and optimizes its code on its first thousands of events, which in a run of 2-3 s was
// about half of what a second worker cost beyond the first (BENCH_INSTANCES_WARM=0 measures
// cold processes). Each run prints the work its workers counted. Goal: two ≥ 0.85×
// one on this 2-core machine, where the two workers and nats-server share the cores (without
// partitions: 0.06-0.09×). BENCH_INSTANCES_TASKS=1 prints each run's worker CPU by thread;
// BENCH_INSTANCES_CPU_PROF=<dir> writes the workers' CPU profiles and each run's window.
// The headline is the median of the rounds' ratios: each round runs one and two back to back,
// under the same load, and the best rounds' ratio (one high round of either side) is beside it.
// Then joins under the same load on a 3-node cluster (support/joins.ts): goal, every instance
// reads its share within 5 s of answering /healthz. BENCH_INSTANCES_ROUNDS=0 runs the joins
// alone, BENCH_INSTANCES_JOINS=N (default 1) of them.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { clusterView } from "../services/cluster/view.ts";
import { partitionMappings } from "../services/cluster/server-config.ts";
import { DEFAULT_NAMES, namesToEnv, type InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import { subjects } from "../services/nats/subjects.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import {
  memberMetricsSubject,
  workerMetricsSubject,
} from "../services/thread-worker/metrics-endpoint.ts";
import { startNatsServer } from "../services/start/nats-server.ts";
import { BenchChild, cpuSecondsOf } from "./support/child.ts";
import { joinRound, type JoinRound } from "./support/joins.ts";
import { serviceEntry } from "./support/service-entry.ts";
import { SettledThreads } from "./support/settled.ts";
import { perSecond, publishAll, roundRobin, type Outgoing } from "./support/load.ts";
import { median } from "./support/timing.ts";
import { sleep } from "../services/util/wait.ts";

const THREADS = Number(process.env.BENCH_INSTANCES_THREADS ?? 200);
const PER_THREAD = Number(process.env.BENCH_INSTANCES_MESSAGES ?? 60);
const MESSAGES = THREADS * PER_THREAD;
const PARTITIONS = 16;
const ROUNDS = Number(process.env.BENCH_INSTANCES_ROUNDS ?? 5);
const JOIN_ROUNDS = Number(process.env.BENCH_INSTANCES_JOINS ?? 1);
/** Messages on other threads through the workers before the clock starts (their warm-up). */
const WARM = Number(process.env.BENCH_INSTANCES_WARM ?? 6_000);

/**
 * BENCH_INSTANCES_CPU_PROF=<dir>: each worker writes a whole-process CPU profile there on exit,
 * named `<run>-r<round>-w<k>.cpuprofile` (run: one, one-partitioned, two).
 */
const CPU_PROF = process.env.BENCH_INSTANCES_CPU_PROF;
let profiledRuns = 0;
function cpuProf(workers: number, partitioned: boolean, w: number): string[] {
  if (!CPU_PROF) return [];
  if (w === 0) profiledRuns++;
  const run = workers === 2 ? "two" : partitioned ? "one-partitioned" : "one";
  const name = `${run}-r${profiledRuns}-w${w + 1}.cpuprofile`;
  return ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`, `--cpu-prof-name=${name}`];
}

/** BENCH_INSTANCES_TASKS=1: each run prints its workers' CPU seconds by thread name. */
const TASKS = process.env.BENCH_INSTANCES_TASKS === "1";
function taskCpu(pid: number | undefined): Map<string, number> {
  const byName = new Map<string, number>();
  if (pid === undefined) return byName;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const cpu = cpuSecondsOf(pid, tid);
      if (cpu !== undefined) byName.set(name, (byName.get(name) ?? 0) + cpu);
    } catch {
      // the thread ended
    }
  }
  return byName;
}

/** Counters whose change over a run says what work it did (outline_worker_<name>_total). */
const WORK = ["events_applied", "summaries", "cuts", "merges", "state_saves", "snapshot_writes"];

/** The workers' WORK counters, summed over every worker that answers. */
async function workCounts(nc: NatsConnection, names: InfraNames, partitioned: boolean) {
  const texts: string[] = [];
  if (partitioned) {
    const answers = await nc.requestMany(memberMetricsSubject(names), undefined, {
      strategy: "timer",
      maxWait: 300,
    });
    for await (const m of answers) texts.push(m.string());
  } else texts.push((await nc.request(workerMetricsSubject(names))).string());
  const sums = new Map<string, number>();
  for (const line of texts.join("\n").split("\n")) {
    const m = /^outline_worker_(\w+)_total(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m && WORK.includes(m[1] as string))
      sums.set(m[1] as string, (sums.get(m[1] as string) ?? 0) + Number(m[2]));
  }
  return sums;
}

/** A timed run: its wall time and the CPU seconds its workers and nats-server used meanwhile. */
interface Round {
  ms: number;
  workerCpu: number;
  serverCpu: number;
}

async function once(worker: string, workers: number, partitioned: boolean): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), "outline-bench-instances-"));
  const names: InfraNames = partitioned
    ? { ...DEFAULT_NAMES, partitions: PARTITIONS }
    : { ...DEFAULT_NAMES };
  const configFile = join(dir, "nats.conf");
  writeFileSync(configFile, partitioned ? partitionMappings(names, PARTITIONS) : "");
  const server = await startNatsServer({
    storeDir: join(dir, "store"),
    preferredPort: 0,
    configFile,
    logFile: join(dir, "nats.log"),
  });
  const nc = await connectNats({ url: server.url, name: "bench-instances" });
  const children: BenchChild[] = [];
  try {
    await ensureTopology(nc, names);
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (!/^(HISTORY_|OUTLINE_|NATS_)/.test(key)) env[key] = value;
    }
    Object.assign(env, namesToEnv(names), {
      NATS_URL: server.url,
      OUTLINE_CONFIG: "",
      HISTORY_TAIL: "200,400",
      HISTORY_OUTLINE: "2000,4000",
      HISTORY_SUMMARIZER: "extractive",
    });
    for (let w = 0; w < workers; w++) {
      const child = new BenchChild(
        `worker ${w + 1}`,
        worker,
        env,
        cpuProf(workers, partitioned, w),
      );
      children.push(child);
      await child.waitFor((line) => line.includes(" consuming "));
    }
    if (partitioned) {
      const view = clusterView(nc, names);
      const share = Math.ceil(PARTITIONS / workers);
      for (let i = 0; i < 200; i++) {
        const v = await view();
        if (v.members.length === workers && v.members.every((m) => m.partitions.length === share))
          break;
        await sleep(50);
      }
    }
    const js = jetstream(nc);
    const kv = await new Kvm(js).open(names.kvBucket);
    const s = subjects(names);
    const settledThreads = new SettledThreads();
    const watch = await kv.watch();
    const watching = (async () => {
      for await (const e of watch) settledThreads.observe(e);
    })();
    const died = Promise.race(children.map((c) => c.exited)).then(() => {
      throw new Error(
        `a worker exited during the run:\n${children.map((c) => c.output()).join("\n")}`,
      );
    });
    died.catch(() => {});
    /** Publishes `load`, then waits until every thread of it is settled (see the top). */
    const settled = async (load: Outgoing[]) => {
      const seqs = await publishAll(js, load);
      const targets = new Map<string, number>();
      for (const [i, m] of load.entries()) targets.set(m.thread, seqs[i] as number);
      await Promise.race([settledThreads.until(targets), died]);
    };
    // Warmed as a long-running worker is: its code compiled and optimized on other threads.
    if (WARM > 0)
      await settled(
        roundRobin(
          WARM,
          THREADS,
          (t) => s.messageCreated(t),
          (t) => `warm${t}`,
        ),
      );
    // What the processes spent, not only how long: a second worker's own costs (its warm-up,
    // its timers) show as CPU beside the first one's.
    const cpu = () => ({
      workers: children.reduce((sum, c) => sum + (cpuSecondsOf(c.child.pid) ?? 0), 0),
      server: cpuSecondsOf(server.process.pid) ?? 0,
    });
    const workBefore = await workCounts(nc, names, partitioned);
    const before = cpu();
    const tasksBefore = TASKS ? children.map((c) => taskCpu(c.child.pid)) : [];
    const started = performance.now();
    const from = process.hrtime.bigint() / 1000n;
    await settled(roundRobin(MESSAGES, THREADS, (t) => s.messageCreated(t)));
    const ms = performance.now() - started;
    const after = cpu();
    const workAfter = await workCounts(nc, names, partitioned);
    const work = WORK.map((k) => `${k} ${(workAfter.get(k) ?? 0) - (workBefore.get(k) ?? 0)}`);
    const run = workers === 2 ? "two" : partitioned ? "one partitioned" : "one";
    console.log(`    ${run}: ${work.join(", ")}`);
    if (TASKS) {
      const spent = children.map((c, i) => {
        const now = taskCpu(c.child.pid);
        const was = tasksBefore[i] ?? new Map<string, number>();
        return [...now]
          .map(([name, s]) => [name, s - (was.get(name) ?? 0)] as const)
          .filter(([, s]) => s > 0)
          .map(([name, s]) => `${name} ${s.toFixed(2)}`)
          .join(", ");
      });
      console.log(`    ${workers} worker(s), CPU s by thread: ${spent.join(" | ")}`);
    }
    // The profiles' clock (µs, monotonic): their samples between these are the measured run's.
    if (CPU_PROF)
      writeFileSync(
        join(CPU_PROF, `window-${profiledRuns}.json`),
        JSON.stringify({ from: Number(from), to: Number(process.hrtime.bigint() / 1000n) }),
      );
    watch.stop();
    await watching;
    return {
      ms,
      workerCpu: after.workers - before.workers,
      serverCpu: after.server - before.server,
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await nc.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<Record<string, number>> {
  if (ROUNDS === 0) return joins();
  const one: Round[] = [];
  const onePartitioned: Round[] = [];
  const two: Round[] = [];
  // Compiled, as deployed (support/service-entry.ts).
  const worker = await serviceEntry("thread-worker");
  for (let round = 0; round < ROUNDS; round++) {
    // Two goes first every other round: neither side always runs on a host the other warmed.
    if (round % 2 === 1) two.push(await once(worker, 2, true));
    one.push(await once(worker, 1, false));
    onePartitioned.push(await once(worker, 1, true));
    if (round % 2 === 0) two.push(await once(worker, 2, true));
  }
  const best = (xs: Round[]) => xs.reduce((a, b) => (b.ms < a.ms ? b : a));
  const rate = (xs: Round[]) => perSecond(MESSAGES, best(xs).ms);
  const rates = (xs: Round[]) =>
    xs
      .map(
        (r) =>
          `${perSecond(MESSAGES, r.ms)} (CPU s: workers ${r.workerCpu.toFixed(1)}, server ${r.serverCpu.toFixed(1)})`,
      )
      .join(", ");
  const pairRatios = two.map((t, i) => (one[i] as Round).ms / t.ms);
  const ratio = Number(median(pairRatios).toFixed(3));
  const bestRatio = Number((rate(two) / rate(one)).toFixed(3));
  console.log(
    `  ${THREADS} threads × ${PER_THREAD} messages, tail 200,400, outline 2000,4000 (msg/s per round): ` +
      `one instance ${rates(one)}; one partitioned ${rates(onePartitioned)}; two partitioned ${rates(two)}`,
  );
  console.log(
    `  two over one, each round: ${pairRatios.map((r) => r.toFixed(3)).join(", ")}; ` +
      `median ${ratio}× (the headline; goal ≥ 0.85 on 2 cores; workers warmed with ${WARM} messages); ` +
      `best rounds: one ${rate(one)} msg/s, two ${rate(two)} msg/s, ${bestRatio}×`,
  );
  const joined = await joins();
  const cpuOf = (xs: Round[]) => Number(median(xs.map((r) => r.workerCpu)).toFixed(1));
  return {
    "instances.messages": MESSAGES,
    "instances.one_msg_per_s": rate(one),
    "instances.one_partitioned_msg_per_s": rate(onePartitioned),
    "instances.two_msg_per_s": rate(two),
    "instances.two_over_one": ratio,
    "instances.two_over_one_best": bestRatio,
    "instances.one_partitioned_worker_cpu_s": cpuOf(onePartitioned),
    "instances.two_worker_cpu_s": cpuOf(two),
    ...joined,
  };
}

const PARTITIONS_JOINED = 32;

/** Joins under the heavy load on a 3-node cluster (support/joins.ts). */
async function joins(): Promise<Record<string, number>> {
  const rounds: JoinRound[] = [];
  for (let i = 0; i < JOIN_ROUNDS; i++) {
    const r = await joinRound(THREADS, PER_THREAD);
    rounds.push(r);
    console.log(
      `  join ${i + 1}: /healthz → share ${r.healthToShare.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s ` +
        `(spawn → /healthz ${r.spawnToHealth.map((ms) => (ms / 1000).toFixed(1)).join(", ")} s; ` +
        `last /healthz → settled ${(r.lastHealthToSettled / 1000).toFixed(1)} s); ` +
        `${r.leases} leases written (${PARTITIONS_JOINED} without moves)`,
    );
  }
  const worst = rounds.map((r) => Math.max(...r.healthToShare));
  return {
    "instances.join_health_to_share_ms": Math.round(median(worst)),
    "instances.join_leases_written": median(rounds.map((r) => r.leases)),
  };
}
