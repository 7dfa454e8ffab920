// Search latency (issue 18): one thread of 10,000 and then 100,000 messages in CHAT on a private
// nats-server, indexed by the search service's indexer, with a snapshot in KV whose lines cover
// all but the newest 200 messages. Queries go over NATS request/reply to the search service (in
// this process), one at a time, a mix of what an agent looks for: planted facts (whole and in
// part), common, middling and rare words, two common words side by side (mostly no match), a
// string found nowhere, two CJK characters, a two-letter Latin query (a scan), and second pages.
// Figures: p50 and p99 per size, the slowest kind's p99, index bytes per message, index rate.
// Baselines in the same run: each search request is paired with a request to an echo responder
// on the same connection (what NATS request/reply alone costs on this machine at that moment:
// on a shared machine the difference is what search adds); and reading the thread from CHAT and
// matching each message (what a search without an index costs), a few queries at each size.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { Message } from "../shared/events.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { fold } from "../shared/search.ts";
import { readInOrder } from "../services/nats/ordered-read.ts";
import { subjects } from "../services/nats/subjects.ts";
import { searchSubject } from "../services/search/api.ts";
import { startSearchService } from "../services/search/service.ts";
import { publishAll, type Outgoing } from "./support/load.ts";
import { startBenchServer } from "./support/server.ts";

const SIZES = (process.env.BENCH_SEARCH_SIZES ?? "10000,100000").split(",").map(Number);
const QUERIES = Number(process.env.BENCH_SEARCH_QUERIES ?? 60);
const BASELINE_QUERIES = 3;
const TAIL = 200;

/** A deterministic stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
}

const COMMON = "the a to and of is in it you that for on we this be with are at not can".split(" ");

/** Words with Zipf's frequencies: a few very common, most rare (rank 1 is the most common). */
function vocabulary(size: number, rnd: () => number): { words: string[]; pick: () => string } {
  const letters = "etaoinshrdlcumwfgypbvkjxqz";
  const words = [...COMMON];
  while (words.length < size) {
    let w = "";
    const length = 3 + Math.floor(rnd() * 7);
    for (let i = 0; i < length; i++) w += letters[Math.floor(rnd() ** 2 * 26)];
    words.push(w);
  }
  const cumulative: number[] = [];
  let total = 0;
  for (let r = 1; r <= size; r++) cumulative.push((total += 1 / r));
  const pick = () => {
    const x = rnd() * total;
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] ?? 0) < x) lo = mid + 1;
      else hi = mid;
    }
    return words[lo] ?? "the";
  };
  return { words, pick };
}

const LENGTHS = [8, 25, 60, 15, 120, 10, 40, 30, 18, 80];
const FACTS = [
  "the locker code is 4711",
  "invoice INV-2026-0042 paid",
  "会议室在三楼",
  "gate B-12",
];

function thread(name: string, count: number): Message[] {
  const rnd = random(42);
  const { pick } = vocabulary(20_000, rnd);
  const out: Message[] = [];
  for (let i = 0; i < count; i++) {
    const words = Array.from({ length: LENGTHS[i % LENGTHS.length] ?? 20 }, pick);
    // A fact now and then, the way a thread mentions one.
    if (i % 997 === 0) words.push(FACTS[(i / 997) % FACTS.length] ?? "");
    out.push({
      id: `${name}-m${i}`,
      thread: name,
      at: new Date(Date.UTC(2026, 0, 1) + i * 1_000).toISOString(),
      from: i % 2 === 0 ? "Ana" : "north",
      role: i % 2 === 0 ? "user" : "assistant",
      text: words.join(" "),
    });
  }
  return out;
}

/**
 * A snapshot whose lines tile all but the newest TAIL messages, about 200 lines of 500 bytes, and
 * whose tail names its messages' CHAT sequences, as the worker's does.
 */
function snapshotOf(name: string, messages: Message[], seqs: number[]): OutlineSnapshot {
  const boundary = messages.length - TAIL;
  let n = 1;
  while (boundary / n > 200) n *= 2;
  const lines = [];
  for (let id = 0; id < boundary;) {
    let size = n;
    while (id + size > boundary || id % size !== 0) size /= 2;
    lines.push({
      id,
      n: size,
      level: Math.log2(size),
      text: "s".repeat(500),
      bytes: 520,
      until: messages[id + size - 1]?.at ?? "",
    });
    id += size;
  }
  return {
    thread: name,
    count: messages.length,
    boundary,
    since: messages[boundary]?.at ?? null,
    cutAt: messages[boundary - 1]?.at ?? null,
    complete: true,
    bytes: lines.length * 520,
    seq: 0,
    lines,
    tail: messages.slice(boundary).map((m) => m.id),
    tailSeqs: seqs.slice(boundary),
    pending: { jobs: 0, cuts: 0, merging: false },
  };
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const round = (n: number) => Math.round(n * 100) / 100;

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("search");
  const dir = mkdtempSync(join(tmpdir(), "outline-bench-search-"));
  const figures: Record<string, number> = {};
  try {
    const nc = await server.connect("search");
    const client = await server.connect("client");
    const names = server.names;
    const s = subjects(names);
    const js = jetstream(client);
    const kv = await new Kvm(js).open(names.kvBucket);
    const path = join(dir, "search.db");
    const service = await startSearchService({ nc, names, path, log: () => {} });
    const indexer = service.indexer;
    await indexer.ready;
    const echo = nc.subscribe(`${names.apiPrefix}.echo`, {
      callback: (_err, msg) => {
        msg.respond(msg.data);
      },
    });
    let indexed = 0;
    for (const size of SIZES) {
      const name = `s${size}`;
      const messages = thread(name, size);
      const outgoing: Outgoing[] = messages.map((m) => ({
        subject: s.messageCreated(name),
        msgID: m.id,
        thread: name,
        data: new TextEncoder().encode(JSON.stringify(m)),
      }));
      const t0 = performance.now();
      const seqs = await publishAll(js, outgoing);
      const last = seqs.at(-1) ?? 0;
      await indexer.reach(last, 600_000);
      const seconds = (performance.now() - t0) / 1000;
      await kv.put(name, JSON.stringify({ ...snapshotOf(name, messages, seqs), seq: last }));
      indexed += size;
      indexer.store().checkpoint();
      const bytes = statSync(path).size;
      figures[`index_rate_${size}`] = Math.round(size / seconds);
      figures[`index_bytes_per_message_${size}`] = Math.round(bytes / indexed);
      console.log(
        `  ${size} messages published and indexed in ${seconds.toFixed(1)} s (${figures[`index_rate_${size}`]}/s); index ${(bytes / 2 ** 20).toFixed(1)} MiB, ${figures[`index_bytes_per_message_${size}`]} bytes per message`,
      );

      const { words } = vocabulary(20_000, random(42));
      const kinds: Record<string, () => Record<string, unknown>> = {
        fact: () => ({ q: "locker code is 4711" }),
        factPart: () => ({ q: "inv-2026-004" }),
        common: () => ({ q: words[0] }),
        middling: () => ({ q: words[300] }),
        rare: () => ({ q: words[8_000] }),
        twoCommon: () => ({ q: `${words[3]} ${words[5]}` }),
        nowhere: () => ({ q: "qqzzxxkk" }),
        cjk: () => ({ q: "会议" }),
        short: () => ({ q: "qz" }),
        page2: () => ({ q: words[0], before: size - 500 }),
      };
      const all: number[] = [];
      const raw: number[] = [];
      let worst = { kind: "", p99: 0 };
      // The kinds take turns, so a busy moment of a shared machine (or the index's idle merge
      // just after the build) falls on each alike; one untimed turn first warms the cache.
      const timesOf = new Map(Object.keys(kinds).map((kind) => [kind, [] as number[]]));
      for (let i = -1; i < QUERIES; i++) {
        for (const [kind, args] of Object.entries(kinds)) {
          const body = JSON.stringify({ thread: name, ...args() });
          const e = performance.now();
          await client.request(`${names.apiPrefix}.echo`, body, { timeout: 30_000 });
          if (i >= 0) raw.push(performance.now() - e);
          const t = performance.now();
          const reply = await client.request(searchSubject(names.apiPrefix), body, {
            timeout: 30_000,
          });
          if (i >= 0) timesOf.get(kind)?.push(performance.now() - t);
          if (reply.headers?.get("Outline-Status") !== "200") {
            throw new Error(`search ${kind} failed: ${reply.string()}`);
          }
        }
      }
      for (const [kind, times] of timesOf) {
        times.sort((a, b) => a - b);
        all.push(...times);
        const p99 = quantile(times, 0.99);
        if (p99 > worst.p99) worst = { kind, p99 };
        console.log(
          `    ${kind.padEnd(10)} p50 ${quantile(times, 0.5).toFixed(2)} ms  p99 ${p99.toFixed(2)} ms`,
        );
      }
      all.sort((a, b) => a - b);
      raw.sort((a, b) => a - b);
      figures[`p50_ms_${size}`] = round(quantile(all, 0.5));
      figures[`p99_ms_${size}`] = round(quantile(all, 0.99));
      figures[`worst_kind_p99_ms_${size}`] = round(worst.p99);
      figures[`echo_p50_ms_${size}`] = round(quantile(raw, 0.5));
      figures[`echo_p99_ms_${size}`] = round(quantile(raw, 0.99));
      console.log(
        `  ${size}: p50 ${figures[`p50_ms_${size}`]} ms, p99 ${figures[`p99_ms_${size}`]} ms over ${all.length} queries (slowest kind: ${worst.kind}, p99 ${round(worst.p99)} ms); echo request p50 ${figures[`echo_p50_ms_${size}`]} ms, p99 ${figures[`echo_p99_ms_${size}`]} ms`,
      );

      // Baseline: no index, the thread read from CHAT and matched per query.
      const jsm = await jetstreamManager(client);
      const baseline: number[] = [];
      for (let i = 0; i < BASELINE_QUERIES; i++) {
        const t = performance.now();
        const q = fold("locker code is 4711");
        const decoder = new TextDecoder();
        let hits = 0;
        await readInOrder(
          client,
          jsm,
          names.chatStream,
          { filter: s.messageCreated(name) },
          () => undefined,
          (m) => {
            const body = JSON.parse(decoder.decode(m.data)) as Message;
            if (fold(body.text).includes(q)) hits += 1;
          },
        );
        baseline.push(performance.now() - t);
        if (hits === 0) throw new Error("the baseline found no fact");
      }
      baseline.sort((a, b) => a - b);
      figures[`baseline_scan_p50_ms_${size}`] = round(quantile(baseline, 0.5));
      console.log(
        `  baseline (read the thread from CHAT per query): p50 ${figures[`baseline_scan_p50_ms_${size}`]} ms`,
      );
    }
    echo.unsubscribe();
    await service.stop();
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}
