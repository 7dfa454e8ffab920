// Pipeline vs raw JetStream, side by side on one private nats-server. The limit: the same bytes
// published to a plain stream and consumed with an ack each. Ours: the same messages published
// to CHAT and counted done when every thread's KV snapshot reflects its last message (the thread
// worker in this process, an instant summarizer so no model time is measured).
import { AckPolicy, jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { nanos } from "@nats-io/transport-node";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { subjects } from "../services/nats/subjects.ts";
import { quietLogger } from "../services/thread-worker/log.ts";
import { M } from "../services/thread-worker/metrics.ts";
import { startThreadWorker } from "../services/thread-worker/worker.ts";
import { InstantSummarizer } from "./support/instant.ts";
import { perSecond, publishAll, roundRobin } from "./support/load.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer, type BenchServer } from "./support/server.ts";

const THREADS = Number(process.env.BENCH_E2E_THREADS ?? 1_000);
const MESSAGES = Number(process.env.BENCH_E2E_MESSAGES ?? 30_000);

/** Publish + consume-with-ack of `messages` on a plain stream: what JetStream itself allows. */
async function raw(server: BenchServer, round: number): Promise<{ ms: number; cpuMs: number }> {
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
  await jsm.consumers.add("RAW", { durable_name: "raw", ack_policy: AckPolicy.Explicit });
  const load = roundRobin(MESSAGES, THREADS, (t) => `raw.${t}.message.created`);
  const consumer = await js.consumers.get("RAW", "raw");
  const messages = await consumer.consume({ max_messages: 1_000 });
  const serverCpuBefore = cpuSecondsOf(server.pid) ?? 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const consumed = (async () => {
    let n = 0;
    for await (const m of messages) {
      m.ack();
      if (++n === MESSAGES) break;
    }
  })();
  await publishAll(js, load);
  await consumed;
  await nc.flush();
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs =
    (cpu.user + cpu.system) / 1_000 + ((cpuSecondsOf(server.pid) ?? 0) - serverCpuBefore) * 1_000;
  messages.stop();
  await jsm.streams.delete("RAW");
  return { ms, cpuMs };
}

/** CPU seconds (user + system) a process has used so far, from /proc; undefined elsewhere. */
function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command name (which may hold spaces): utime and stime are 14th and 15th.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** The same load through the thread worker, done when every snapshot shows its last message. */
async function ours(server: BenchServer): Promise<{
  ms: number;
  calls: number;
  cpuMs: number;
  serverCpuMs: number | undefined;
  perMessage: string;
}> {
  const workerNc = await server.connect("worker");
  const summarizer = new InstantSummarizer();
  const worker = await startThreadWorker({
    nc: workerNc,
    names: server.names,
    settings: DEFAULT_SETTINGS,
    summarizer,
    log: quietLogger,
  });
  const nc = await server.connect("publisher");
  const js = jetstream(nc);
  const kv = await new Kvm(js).open(server.names.kvBucket);
  const s = subjects(server.names);
  const load = roundRobin(MESSAGES, THREADS, (t) => s.messageCreated(t));

  // Highest sequence each thread's snapshot reflects, as the bucket announces writes.
  const shown = new Map<string, number>();
  const watch = await kv.watch();
  // Each thread's last sequence, known once publishing is done.
  const target = new Map<string, number>();
  let missing = THREADS;
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((r) => (resolveDone = r));
  const reached = (thread: string) => {
    const want = target.get(thread);
    return want !== undefined && (shown.get(thread) ?? 0) >= want;
  };
  const watching = (async () => {
    for await (const e of watch) {
      if (e.operation !== "PUT") continue;
      const before = reached(e.key);
      shown.set(e.key, Math.max(shown.get(e.key) ?? 0, e.json<{ seq: number }>().seq));
      if (!before && reached(e.key) && --missing === 0) resolveDone();
    }
  })();

  const serverCpuBefore = cpuSecondsOf(server.pid);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await profiled(async () => {
    const seqs = await publishAll(js, load);
    for (const [i, m] of load.entries()) target.set(m.thread, seqs[i] as number);
    missing = [...target.keys()].filter((t) => !reached(t)).length;
    if (missing > 0) await done;
  });
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const serverCpuAfter = cpuSecondsOf(server.pid);
  watch.stop();
  await watching;
  const perMessage = (
    [
      ["gap reads", M.gapReads],
      ["state saves", M.stateSaves],
      ["snapshot writes", M.snapshotWrites],
    ] as const
  )
    .map(([what, name]) => `${(worker.metrics.get(name) / MESSAGES).toFixed(2)} ${what}`)
    .join(", ");
  await worker.stop();
  return {
    perMessage,
    ms,
    calls: summarizer.calls,
    cpuMs: (cpu.user + cpu.system) / 1_000,
    serverCpuMs:
      serverCpuBefore === undefined || serverCpuAfter === undefined
        ? undefined
        : (serverCpuAfter - serverCpuBefore) * 1_000,
  };
}

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("e2e");
  try {
    // Raw before and after ours, averaged: the machine is shared, so its load drifts.
    const rawBefore = await raw(server, 1);
    const { ms, calls, cpuMs, serverCpuMs, perMessage } = await ours(server);
    const rawAfter = await raw(server, 2);
    const rawMs = (rawBefore.ms + rawAfter.ms) / 2;
    const rawCpuMs = (rawBefore.cpuMs + rawAfter.cpuMs) / 2;
    const rawRate = perSecond(MESSAGES, rawMs);
    const ourRate = perSecond(MESSAGES, ms);
    const ratio = Number((ourRate / rawRate).toFixed(3));
    console.log(
      `  ${MESSAGES} messages over ${THREADS} threads: raw JetStream ${rawRate} msg/s (${(rawMs / 1000).toFixed(1)} s), ` +
        `ours ${ourRate} msg/s (${(ms / 1000).toFixed(1)} s), ratio ${ratio} (target ≥ 0.5); ${calls} summarizer calls`,
    );
    // Both share the machine's cores (and other work on it): CPU time is the steadier figure.
    console.log(
      `  raw used ${(rawCpuMs / 1000).toFixed(1)} CPU s (client and nats-server together)`,
    );
    console.log(
      `  ours used ${(cpuMs / 1000).toFixed(1)} CPU s in this process (workers, publisher, watcher)` +
        (serverCpuMs === undefined
          ? ""
          : ` and ${(serverCpuMs / 1000).toFixed(1)} CPU s in nats-server`) +
        `; per message: ${perMessage}`,
    );
    return {
      "e2e.messages": MESSAGES,
      "e2e.threads": THREADS,
      "e2e.raw_msgs_per_sec": rawRate,
      "e2e.ours_msgs_per_sec": ourRate,
      "e2e.ratio": ratio,
      "e2e.summarizer_calls": calls,
    };
  } finally {
    await server.stop();
  }
}
