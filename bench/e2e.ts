// Pipeline vs raw JetStream, side by side on one private nats-server. The limit: the same bytes
// published to a plain stream and consumed with an ack each. Ours: the same messages published
// to CHAT and counted done when every thread's KV snapshot reflects its last message (the thread
// worker in this process, an instant summarizer so no model time is measured).
import { AckPolicy, jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { nanos } from "@nats-io/transport-node";
import { performance } from "node:perf_hooks";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { subjects } from "../services/nats/subjects.ts";
import { quietLogger } from "../services/thread-worker/log.ts";
import { startThreadWorker } from "../services/thread-worker/worker.ts";
import { InstantSummarizer } from "./support/instant.ts";
import { perSecond, publishAll, roundRobin } from "./support/load.ts";
import { startBenchServer, type BenchServer } from "./support/server.ts";

const THREADS = Number(process.env.BENCH_E2E_THREADS ?? 1_000);
const MESSAGES = Number(process.env.BENCH_E2E_MESSAGES ?? 30_000);

/** Publish + consume-with-ack of `messages` on a plain stream: what JetStream itself allows. */
async function raw(server: BenchServer, round: number): Promise<number> {
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
  messages.stop();
  await jsm.streams.delete("RAW");
  return ms;
}

/** The same load through the thread worker, done when every snapshot shows its last message. */
async function ours(server: BenchServer): Promise<{ ms: number; calls: number }> {
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

  const started = performance.now();
  const seqs = await publishAll(js, load);
  for (const [i, m] of load.entries()) target.set(m.thread, seqs[i] as number);
  missing = [...target.keys()].filter((t) => !reached(t)).length;
  if (missing > 0) await done;
  const ms = performance.now() - started;
  watch.stop();
  await watching;
  await worker.stop();
  return { ms, calls: summarizer.calls };
}

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("e2e");
  try {
    // Raw before and after ours, averaged: the machine is shared, so its load drifts.
    const rawBefore = await raw(server, 1);
    const { ms, calls } = await ours(server);
    const rawMs = (rawBefore + (await raw(server, 2))) / 2;
    const rawRate = perSecond(MESSAGES, rawMs);
    const ourRate = perSecond(MESSAGES, ms);
    const ratio = Number((ourRate / rawRate).toFixed(3));
    console.log(
      `  ${MESSAGES} messages over ${THREADS} threads: raw JetStream ${rawRate} msg/s (${(rawMs / 1000).toFixed(1)} s), ` +
        `ours ${ourRate} msg/s (${(ms / 1000).toFixed(1)} s), ratio ${ratio} (target ≥ 0.5); ${calls} summarizer calls`,
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
