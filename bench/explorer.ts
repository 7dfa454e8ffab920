// The explorer at scale: the thread list over 100k threads (BENCH_EXPLORER_THREADS) whose
// snapshot bucket was written 130k times (so its stream has holes, as a live one does), and a
// thread page of a ~1M-message thread, each through the explorer's HTTP routes on a private
// nats-server. Baselines in the same run: a raw direct get of one snapshot, the nats.js key
// listing of the whole bucket (what a list without our scan would read), and the same thread
// page for a 10k-message thread with the same outline and tail (its time should not differ).
import { Agent } from "node:http";
import { performance } from "node:perf_hooks";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { InfraNames } from "../services/config/names.ts";
import { subjects } from "../services/nats/subjects.ts";
import { createExplorer } from "../services/explorer/explorer.ts";
import type { ThreadPage } from "../services/explorer/types.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import type { OutlineSnapshot, SnapshotLine } from "../shared/snapshot.ts";
import { benchMessage, publishAll, type Outgoing } from "./support/load.ts";
import { startBenchServer } from "./support/server.ts";
import { getText, ms, quantile, timed } from "./support/timing.ts";

const THREADS = Number(process.env.BENCH_EXPLORER_THREADS ?? 100_000);
const REWRITTEN = Math.round(THREADS * 0.3);
const REQUESTS = Number(process.env.BENCH_EXPLORER_REQUESTS ?? 200);
const ROUNDS = 3;
const TAIL = 150;
const LINE_TEXT = "Ana → north: the deploy of billing v2 moved to Tuesday after review; ".repeat(7);
const encoder = new TextEncoder();

const threadName = (i: number) => `thread-${String(i).padStart(6, "0")}`;

/** A list row's worth of snapshot: what most threads of a busy platform look like. */
function smallSnapshot(thread: string, i: number): string {
  return JSON.stringify({
    thread,
    count: 40 + (i % 900),
    boundary: 20 + (i % 800),
    since: null,
    cutAt: null,
    complete: true,
    bytes: 2_000 + (i % 60_000),
    seq: i,
    lines: [{ id: 0, n: 16, level: 4, text: LINE_TEXT, bytes: 500, until: "2026-01-01T00:00:00Z" }],
    tail: [],
    tailSeqs: [],
    pending: { jobs: 0, cuts: 0, merging: false },
  });
}

/**
 * Lines tiling [0, boundary): the binary decomposition of its start, then 230 lines of `fine`
 * messages each, as an outline near its byte limit looks (~236 lines of ~500 bytes: ~120 KB).
 */
function outlineLines(boundary: number, fine: number): SnapshotLine[] {
  const lines: SnapshotLine[] = [];
  const line = (id: number, n: number): SnapshotLine => ({
    id,
    n,
    level: Math.log2(n),
    text: LINE_TEXT,
    bytes: 500,
    until: "2026-01-01T00:00:00Z",
  });
  let at = 0;
  const coarseEnd = boundary - 230 * fine;
  for (let n = 2 ** 30; n >= fine; n /= 2) {
    if (at + n > coarseEnd) continue;
    lines.push(line(at, n));
    at += n;
  }
  for (; at < boundary; at += fine) lines.push(line(at, fine));
  return lines;
}

/**
 * A thread of `boundary + TAIL` messages stored as the worker leaves it: the snapshot, the tail's
 * messages in CHAT, and HISTORY nodes along the left edge of its first line down to message 0.
 */
async function bigThread(
  nc: NatsConnection,
  names: InfraNames,
  thread: string,
  boundary: number,
  fine: number,
): Promise<number> {
  const js = jetstream(nc);
  const s = subjects(names);
  const first = benchMessage(thread, 0);
  const firstSeq = (await js.publish(s.messageCreated(thread), JSON.stringify(first))).seq;
  const tail = Array.from({ length: TAIL }, (_, k) => ({
    ...benchMessage(thread, k + 1),
    id: `${thread}-t${k}`,
  }));
  const seqs = await publishAll(
    js,
    tail.map((m): Outgoing => ({
      subject: s.messageCreated(thread),
      msgID: m.id,
      thread,
      data: encoder.encode(JSON.stringify(m)),
    })),
    16,
  );
  const lines = outlineLines(boundary, fine);
  const top = lines[0] as SnapshotLine;
  for (let level = top.level - 1; level >= 0; level--) {
    for (const index of [0, 1]) {
      const node = { thread, level, index, text: LINE_TEXT, until: first.at, by: "bench" };
      const leaf = level === 0 && index === 0 ? { message: { id: first.id, seq: firstSeq } } : {};
      await js.publish(s.historyNode(thread, level, index), JSON.stringify({ ...node, ...leaf }));
    }
  }
  const snapshot: OutlineSnapshot = {
    thread,
    count: boundary + TAIL,
    boundary,
    since: tail[0]?.at ?? null,
    cutAt: tail[0]?.at ?? null,
    complete: true,
    bytes: lines.reduce((sum, l) => sum + l.bytes, 0),
    seq: seqs.at(-1) ?? 0,
    lines,
    tail: tail.map((m) => m.id),
    tailSeqs: seqs,
    pending: { jobs: 0, cuts: 0, merging: false },
  };
  const kv = await new Kvm(js).open(names.kvBucket);
  await kv.put(thread, JSON.stringify(snapshot));
  return top.level;
}

/** Best (lowest p99) of ROUNDS rounds of `count` sequential requests. */
async function best(count: number, fn: () => Promise<unknown>): Promise<number[]> {
  let kept: number[] | undefined;
  for (let r = 0; r < ROUNDS; r++) {
    const times = await timed(count, fn);
    if (!kept || quantile(times, 0.99) < quantile(kept, 0.99)) kept = times;
  }
  return kept ?? [];
}

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("explorer");
  const closers: (() => void)[] = [];
  try {
    const nc = await server.connect("explorer");
    const js = jetstream(nc);
    const names = server.names;
    const kvSubject = (t: string) => `$KV.${names.kvBucket}.${t}`;
    const t0 = performance.now();
    const writes: Outgoing[] = [];
    for (let i = 0; i < THREADS; i++) {
      const t = threadName(i);
      writes.push({
        subject: kvSubject(t),
        msgID: `w${i}`,
        thread: t,
        data: encoder.encode(smallSnapshot(t, i)),
      });
    }
    // A third written again, spread over the bucket: the stream has holes, as a live one has.
    for (let k = 0; k < REWRITTEN; k++) {
      const i = (k * 7919) % THREADS;
      const t = threadName(i);
      writes.push({
        subject: kvSubject(t),
        msgID: `r${k}`,
        thread: t,
        data: encoder.encode(smallSnapshot(t, i)),
      });
    }
    await publishAll(js, writes);
    console.log(
      `  ${THREADS} threads, ${writes.length} snapshot writes in ${Math.round(performance.now() - t0)} ms`,
    );
    const bigLevel = await bigThread(nc, names, "big-1m", 976 * 1024, 1024);
    await bigThread(nc, names, "small-10k", 320 * 32, 32);

    const reader = createReader(nc, names);
    const operations = createOperations(reader);
    const explorer = createExplorer({
      nc,
      names,
      reader,
      operations,
      settings: DEFAULT_SETTINGS,
      token: undefined,
    });
    const http = createHttpServer({
      operations,
      metrics: createMetrics(nc, { workerSubject: `${names.apiPrefix}.metrics.worker` }),
      health: natsHealth(nc),
      token: undefined,
      log: () => {},
      explorer,
    });
    const { port } = await listen(http, "127.0.0.1", 0);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    closers.push(() => {
      agent.destroy();
      explorer.close();
      http.close();
    });
    const get = (path: string) => getText(agent, port, path);
    const page = async (path: string) => JSON.parse(await get(path)) as ThreadPage;

    await get("/ui/"); // builds the page's files once
    const firstPage = await page("/ui/api/threads?limit=50");
    if (firstPage.threads.length !== 50)
      throw new Error(`first page has ${firstPage.threads.length} rows`);
    // 100 pages deep (5,000 threads): where the deep page is read from.
    let before = firstPage.next;
    for (let p = 1; p < 100 && before !== null; p++)
      before = (await page(`/ui/api/threads?limit=50&before=${before}`)).next;
    const first = await best(REQUESTS, () => get("/ui/api/threads?limit=50"));
    const deep = await best(REQUESTS, () => get(`/ui/api/threads?limit=50&before=${before}`));
    // A filter only the oldest thread matches: the whole bucket is scanned (headers only), in
    // as many requests as the scan limit makes it (each says how far it got).
    const rare = await best(3, async () => {
      let cursor = "";
      for (;;) {
        const r = await page(`/ui/api/threads?limit=50&filter=${threadName(1)}${cursor}`);
        if (r.threads[0]?.thread === threadName(1)) return;
        if (r.next === null) throw new Error("the rare filter missed");
        cursor = `&before=${r.next}`;
      }
    });
    const kv = await new Kvm(js).open(names.kvBucket, { allow_direct: true });
    const rawGet = await best(REQUESTS, () => kv.get(threadName(THREADS - 1)));
    const keysStart = performance.now();
    let keys = 0;
    for await (const _ of await kv.keys()) keys += 1;
    const allKeys = performance.now() - keysStart;
    console.log(
      `  list p50/p99 ms: first ${ms(quantile(first, 0.5))}/${ms(quantile(first, 0.99))}, 100 pages deep ${ms(quantile(deep, 0.5))}/${ms(quantile(deep, 0.99))}; rare filter ${ms(quantile(rare, 0.5))}; raw KV get ${ms(quantile(rawGet, 0.5))}/${ms(quantile(rawGet, 0.99))}; all ${keys} keys ${ms(allKeys)}`,
    );

    const threadBig = await best(REQUESTS, () => get("/ui/api/threads/big-1m"));
    const threadSmall = await best(REQUESTS, () => get("/ui/api/threads/small-10k"));
    const tailBig = await best(REQUESTS, () =>
      get("/ui/api/threads/big-1m/tail?offset=100&limit=50"),
    );
    // From the top line (2^19 messages) down to message 0: one zoom per level.
    const zoomDown = await best(20, async () => {
      for (let level = bigLevel; level >= 0; level--)
        await get(`/ui/api/threads/big-1m/zoom?id=0&n=${2 ** level}`);
    });
    console.log(
      `  thread page p50/p99 ms: ~1M ${ms(quantile(threadBig, 0.5))}/${ms(quantile(threadBig, 0.99))}, 10k ${ms(quantile(threadSmall, 0.5))}/${ms(quantile(threadSmall, 0.99))}; tail page ${ms(quantile(tailBig, 0.5))}; ${bigLevel + 1} zooms down to a message ${ms(quantile(zoomDown, 0.5))}`,
    );
    return {
      "explorer.threads": THREADS,
      "explorer.list_p50_ms": ms(quantile(first, 0.5)),
      "explorer.list_p99_ms": ms(quantile(first, 0.99)),
      "explorer.list_deep_p50_ms": ms(quantile(deep, 0.5)),
      "explorer.list_deep_p99_ms": ms(quantile(deep, 0.99)),
      "explorer.list_rare_filter_ms": ms(quantile(rare, 0.5)),
      "explorer.kv_get_p50_ms": ms(quantile(rawGet, 0.5)),
      "explorer.kv_all_keys_ms": ms(allKeys),
      "explorer.thread_1m_p50_ms": ms(quantile(threadBig, 0.5)),
      "explorer.thread_1m_p99_ms": ms(quantile(threadBig, 0.99)),
      "explorer.thread_10k_p50_ms": ms(quantile(threadSmall, 0.5)),
      "explorer.tail_page_1m_p50_ms": ms(quantile(tailBig, 0.5)),
      "explorer.zoom_down_1m_ms": ms(quantile(zoomDown, 0.5)),
    };
  } finally {
    for (const close of closers) close();
    await server.stop();
  }
}
