// Memory under many threads (issue 48): 100,000 threads (BENCH_THREADS_COUNT) × 3 messages
// (BENCH_THREADS_MESSAGES), round-robin, so every thread is active at once, through one thread
// worker process (compiled, default settings, extractive summarizer) on a private nats-server.
// BENCH_THREADS_CAP sets OUTLINE_MAX_ACTORS: unset, the worker's default; `none`, no cap. The
// clock runs from the first publish until the consumer has every event delivered and
// acknowledged (applied and saved). Printed: throughput, peak worker RSS (sampled from /proc
// every 50 ms; nats-server's too), time to settle, the worker's cap passivations and its
// re-loads (rehydrations), whatever passivated the thread: a thread that comes back after
// OUTLINE_IDLE_MS (60 s) was passivated as idle, so the re-loads the cap causes are those of a
// capped run less those of the same run with BENCH_THREADS_CAP=none.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { namesToEnv } from "../services/config/names.ts";
import { subjects } from "../services/nats/subjects.ts";
import { workerMetricsSubject } from "../services/thread-worker/metrics-endpoint.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { BenchChild } from "./support/child.ts";
import { perSecond, roundRobin, type Outgoing } from "./support/load.ts";
import { startBenchServer } from "./support/server.ts";
import { serviceEntry } from "./support/service-entry.ts";

const THREADS = Number(process.env.BENCH_THREADS_COUNT ?? 100_000);
const PER_THREAD = Number(process.env.BENCH_THREADS_MESSAGES ?? 3);
const CAP = process.env.BENCH_THREADS_CAP?.trim();
/** Threads whose snapshot is read back at the end: each must show all its messages. */
const CHECKED = 1_000;

/** Resident set size of a process in bytes, from /proc; undefined elsewhere or once it exited. */
function rssOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("VmRSS:"));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** One sample's value from Prometheus text (0 when absent). */
function sample(text: string, name: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : 0;
}

/**
 * Publishes with 256 acks outstanding, each waited for up to a minute and retried (the same
 * msgID, so never stored twice): with 100,000 actors the worker and the server share two cores,
 * and an ack can take longer than the client's default 5 s.
 */
async function publishPatiently(js: JetStreamClient, messages: readonly Outgoing[]): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < messages.length) {
      const m = messages[next++] as Outgoing;
      for (let attempt = 0; ; attempt++) {
        try {
          await js.publish(m.subject, m.data, { msgID: m.msgID, timeout: 60_000 });
          break;
        } catch (err) {
          if (attempt >= 3) throw err;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 256 }, lane));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("threads");
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(HISTORY_|OUTLINE_|NATS_)/.test(key)) env[key] = value;
  }
  Object.assign(env, namesToEnv(server.names), {
    NATS_URL: server.url,
    OUTLINE_CONFIG: "",
    HISTORY_SUMMARIZER: "extractive",
    ...(CAP ? { OUTLINE_MAX_ACTORS: CAP } : {}),
  });
  const worker = new BenchChild("thread worker", await serviceEntry("thread-worker"), env);
  let peak = 0;
  let serverPeak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssOf(worker.pid) ?? 0);
    serverPeak = Math.max(serverPeak, rssOf(server.pid) ?? 0);
  }, 50);
  try {
    await worker.waitFor((line) => line.includes(" consuming "));
    const nc = await server.connect("load");
    const js = jetstream(nc, { timeout: 30_000 });
    const jsm = await jetstreamManager(nc, { timeout: 30_000 });
    const s = subjects(server.names);
    // A scrape the busy worker does not answer in time is tried again, up to a minute.
    const metrics = async (): Promise<string> => {
      for (let attempt = 0; ; attempt++) {
        try {
          const subject = workerMetricsSubject(server.names);
          return (await nc.request(subject, undefined, { timeout: 10_000 })).string();
        } catch (err) {
          if (attempt >= 6)
            throw new Error(`the worker's metrics: ${(err as Error).message}\n${worker.output()}`);
          await sleep(1_000);
        }
      }
    };
    const capShown = sample(await metrics(), "outline_worker_actor_cap");
    const load = roundRobin(THREADS * PER_THREAD, THREADS, (t) => s.messageCreated(t));
    const idleRss = rssOf(worker.pid) ?? 0;
    peak = idleRss;
    const died = worker.exited.then(() => {
      throw new Error(`the worker exited during the run:\n${worker.output()}`);
    });
    died.catch(() => {});

    const started = performance.now();
    await Promise.race([publishPatiently(js, load), died]);
    const published = performance.now() - started;
    let mostActors = 0;
    for (;;) {
      const [info, text] = await Promise.race([
        Promise.all([
          jsm.consumers.info(server.names.chatStream, server.names.workerDurable),
          metrics(),
        ]),
        died,
      ]);
      mostActors = Math.max(mostActors, sample(text, "outline_worker_actors"));
      if (info.num_pending === 0 && info.num_ack_pending === 0) break;
      await sleep(200);
    }
    const settled = performance.now() - started;
    const text = await metrics();
    const reloads = sample(text, "outline_worker_rehydrations_total");
    const capped = sample(text, "outline_worker_cap_passivations_total");
    const applied = sample(text, 'outline_worker_events_applied_total{kind="message"}');
    const endRss = rssOf(worker.pid) ?? 0;

    // Read back: every thread checked shows all its messages.
    const kv = await new Kvm(js).open(server.names.kvBucket);
    const step = Math.max(1, Math.floor(THREADS / CHECKED));
    for (let t = 0; t < THREADS; t += step) {
      let shown: OutlineSnapshot | undefined;
      for (let i = 0; i < 50; i++) {
        shown = (await kv.get(`t${t}`))?.json<OutlineSnapshot>();
        if (shown?.count === PER_THREAD) break;
        await sleep(100);
      }
      if (shown?.count !== PER_THREAD) {
        throw new Error(`thread t${t} shows ${shown?.count ?? "no"} messages, not ${PER_THREAD}`);
      }
    }

    const messages = THREADS * PER_THREAD;
    const mb = (b: number) => Math.round(b / 2 ** 20);
    const capName = capShown > 0 ? String(capShown) : "none";
    console.log(
      `  ${THREADS} threads × ${PER_THREAD} messages, round-robin, cap ${capName}: ` +
        `published in ${(published / 1000).toFixed(1)} s, settled in ${(settled / 1000).toFixed(1)} s ` +
        `(${perSecond(messages, settled)} msg/s); ${applied} applied`,
    );
    console.log(
      `  worker RSS ${mb(idleRss)} MB idle → peak ${mb(peak)} MB → ${mb(endRss)} MB settled; ` +
        `live actors at most ${mostActors} (sampled); ${reloads} re-loads, ${capped} cap passivations; ` +
        `nats-server RSS peak ${mb(serverPeak)} MB`,
    );
    return {
      "threads.threads": THREADS,
      "threads.messages": messages,
      "threads.cap": capShown,
      "threads.msg_per_s": perSecond(messages, settled),
      "threads.settle_s": Number((settled / 1000).toFixed(1)),
      "threads.rss_mb_idle": mb(idleRss),
      "threads.rss_mb_peak": mb(peak),
      "threads.rss_mb_settled": mb(endRss),
      "threads.server_rss_mb_peak": mb(serverPeak),
      "threads.actors_max_sampled": mostActors,
      "threads.reloads": reloads,
      "threads.cap_passivations": capped,
    };
  } finally {
    clearInterval(sampler);
    await worker.stop(60_000);
    await server.stop();
  }
}
