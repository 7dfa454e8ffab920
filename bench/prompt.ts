// Prompt latency: GET /threads/{t}/prompt for a thread at a full outline and a full tail (default
// settings), against the prompt-builder's HTTP server over a private nats-server, vs a raw KV get
// of the same thread's snapshot over the same NATS connection. Sequential requests, one at a time,
// in three rounds of each (the best p99 of each side is kept: the first round still warms up).
// Nothing changes between requests, so the prompt-builder serves the body it built first (checked
// against a fresh read of the snapshot and the newest sequence each time); a second server that
// keeps nothing measures what a request costs when it must build the prompt.
// Then turns, the usual real pattern: one new message is published, then its prompt is asked for
// while the snapshot (written by the coalescing worker) lags a few messages behind, so every
// prompt includes the messages stored after the snapshot. Every TURN_SNAPSHOT_EVERY turns the
// snapshot catches up (written as the worker would, through the pure core), which bounds how
// many messages are newer than it.
import { request, Agent } from "node:http";
import { performance } from "node:perf_hooks";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { Message } from "../shared/events.ts";
import { answerAll } from "../shared/replay.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import { appendMessage, initialThreadState, type ThreadState } from "../shared/thread.ts";
import { estimateMessageTokens } from "../shared/tokens.ts";
import { subjects } from "../services/nats/subjects.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/prompt-builder/reader.ts";
import { benchMessage, publishAll, type Outgoing } from "./support/load.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer } from "./support/server.ts";

const REQUESTS = Number(process.env.BENCH_PROMPT_REQUESTS ?? 1_000);
const TURNS = Number(process.env.BENCH_PROMPT_TURNS ?? 300);
/** Rounds of REQUESTS prompts and as many KV gets; each side keeps its best (lowest p99). */
const PROMPT_ROUNDS = Number(process.env.BENCH_PROMPT_ROUNDS ?? 3);
const TURN_SNAPSHOT_EVERY = 20;
const THREAD = "full";
const [, OUTLINE_HIGH] = DEFAULT_SETTINGS.outline;
const [, TAIL_HIGH] = DEFAULT_SETTINGS.tail;

const tailTokens = (s: ThreadState) =>
  s.tail.reduce((sum, e) => sum + estimateMessageTokens(e.message), 0);

/** The core's state after one more message, its summaries answered at once. */
const withMessage = (state: ThreadState, message: Message, seq: number): ThreadState =>
  answerAll(appendMessage(state, message, seq).state, (job) =>
    `${job.name} ${"s".repeat(300)}`.slice(0, job.line),
  );

/**
 * Appends messages through the pure core (instant summaries) until the outline is past 80% of
 * its high mark and the tail past 90% of its own, i.e. just before a cut: the largest prompt.
 */
function fullThread(): { state: ThreadState; messages: Message[] } {
  let state = initialThreadState(THREAD, DEFAULT_SETTINGS);
  const messages: Message[] = [];
  for (let i = 0; i < 50_000; i++) {
    const message = benchMessage(THREAD, i);
    messages.push(message);
    state = withMessage(state, message, i + 1);
    if (state.outlineBytes >= 0.8 * OUTLINE_HIGH && tailTokens(state) >= 0.9 * TAIL_HIGH)
      return { state, messages };
  }
  throw new Error(
    "the bench thread never reached a full outline and a full tail in 50,000 messages",
  );
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

async function timed(count: number, fn: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b);
}

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent }, (res) => {
      let bytes = 0;
      res.on("data", (chunk: Buffer) => (bytes += chunk.length));
      res.on("end", () =>
        res.statusCode === 200
          ? resolve(bytes)
          : reject(new Error(`GET ${path} answered ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

const ms = (x: number) => Number(x.toFixed(3));

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("prompt");
  const http = { close: () => {} };
  try {
    const { state, messages } = fullThread();
    const nc = await server.connect("prompt-builder");
    const js = jetstream(nc);
    const s = subjects(server.names);
    const encoder = new TextEncoder();
    const seqs = await publishAll(
      js,
      messages.map((m): Outgoing => ({
        subject: s.messageCreated(THREAD),
        msgID: m.id,
        thread: THREAD,
        data: encoder.encode(JSON.stringify(m)),
      })),
      1,
    );
    if (seqs.at(-1) !== messages.length)
      throw new Error("CHAT sequences differ from positions: the bench server was not empty");
    // Direct gets, the fastest read the bucket allows: the baseline the prompt is held to.
    const kv = await new Kvm(js).open(server.names.kvBucket, { allow_direct: true });
    await kv.put(THREAD, JSON.stringify(toSnapshot(state)));

    const metrics = createMetrics(nc, {
      workerSubject: `${server.names.apiPrefix}.metrics.worker`,
    });
    const operations = createOperations(
      createReader(nc, server.names, {
        onNewerRead: (path, count) => metrics.newerRead(path, count),
      }),
      { tailCap: 2 * TAIL_HIGH, onPromptCache: (hit) => metrics.promptCache(hit) },
    );
    const httpServer = createHttpServer({
      operations,
      metrics,
      health: natsHealth(nc),
      token: undefined,
      log: () => {},
    });
    const { port } = await listen(httpServer, "127.0.0.1", 0);
    // The same server keeping no built prompt: what a request costs when something changed.
    const uncachedServer = createHttpServer({
      operations: createOperations(createReader(nc, server.names), {
        tailCap: 2 * TAIL_HIGH,
        promptCacheBytes: 0,
      }),
      metrics,
      health: natsHealth(nc),
      token: undefined,
      log: () => {},
    });
    const uncachedPort = (await listen(uncachedServer, "127.0.0.1", 0)).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    http.close = () => {
      agent.destroy();
      httpServer.close();
      uncachedServer.close();
    };
    const path = `/threads/${THREAD}/prompt?agent=north`;
    const bytes = await get(agent, port, path);
    await timed(50, () => get(agent, port, path)); // warm-up
    // PROMPT_ROUNDS rounds of the prompts then the KV gets; each keeps its round of lowest p99.
    // A hiccup of the host only ever adds time, so the best round is the closest to what a
    // request costs itself (as e2e and replay keep their best rounds).
    let prompt: number[] = [];
    let raw: number[] = [];
    const p99s: string[] = [];
    for (let round = 0; round < PROMPT_ROUNDS; round++) {
      const timedPrompts = () => timed(REQUESTS, () => get(agent, port, path));
      const p = round === 0 ? await profiled(timedPrompts) : await timedPrompts();
      const k = await timed(REQUESTS, () => kv.get(THREAD));
      p99s.push(`${ms(quantile(p, 0.99))} / ${ms(quantile(k, 0.99))}`);
      if (prompt.length === 0 || quantile(p, 0.99) < quantile(prompt, 0.99)) prompt = p;
      if (raw.length === 0 || quantile(k, 0.99) < quantile(raw, 0.99)) raw = k;
    }
    console.log(`  p99 per round, prompt / raw KV get (ms): ${p99s.join("; ")}`);
    await timed(50, () => get(agent, uncachedPort, path)); // warm-up
    const uncached = await timed(REQUESTS, () => get(agent, uncachedPort, path));

    // Turns: publish one message, then GET the prompt (only the GET is timed). The snapshot
    // catches up every TURN_SNAPSHOT_EVERY turns, so 1 to TURN_SNAPSHOT_EVERY messages are newer.
    let turnState = state;
    let pending: { message: Message; seq: number }[] = [];
    let newest = 0;
    const turns: number[] = [];
    for (let t = 0; t < TURNS; t++) {
      if (pending.length === TURN_SNAPSHOT_EVERY) {
        for (const p of pending) turnState = withMessage(turnState, p.message, p.seq);
        pending = [];
        await kv.put(THREAD, JSON.stringify(toSnapshot(turnState)));
      }
      const message = benchMessage(THREAD, messages.length + t);
      const { seq } = await js.publish(s.messageCreated(THREAD), JSON.stringify(message), {
        msgID: message.id,
      });
      pending.push({ message, seq });
      const started = performance.now();
      newest = await get(agent, port, path);
      turns.push(performance.now() - started);
    }
    turns.sort((a, b) => a - b);

    const figures = {
      "prompt.outline_kb": Math.round(state.outlineBytes / 1000),
      "prompt.tail_tokens": tailTokens(state),
      "prompt.tail_messages": state.tail.length,
      "prompt.response_kb": Math.round(bytes / 1000),
      "prompt.p50_ms": ms(quantile(prompt, 0.5)),
      "prompt.p99_ms": ms(quantile(prompt, 0.99)),
      "prompt.kv_get_p50_ms": ms(quantile(raw, 0.5)),
      "prompt.kv_get_p99_ms": ms(quantile(raw, 0.99)),
      "prompt.uncached_p50_ms": ms(quantile(uncached, 0.5)),
      "prompt.uncached_p99_ms": ms(quantile(uncached, 0.99)),
      "prompt.turn_p50_ms": ms(quantile(turns, 0.5)),
      "prompt.turn_p99_ms": ms(quantile(turns, 0.99)),
    };
    console.log(
      `  thread of ${state.count} messages: outline ${figures["prompt.outline_kb"]} KB (${state.outline.length} lines), tail ${figures["prompt.tail_tokens"]} tokens (${state.tail.length} messages); prompt ${figures["prompt.response_kb"]} KB`,
    );
    console.log(
      `  GET prompt ×${REQUESTS}: p50 ${figures["prompt.p50_ms"]} ms, p99 ${figures["prompt.p99_ms"]} ms (target p99 < 10 ms); raw KV get p50 ${figures["prompt.kv_get_p50_ms"]} ms, p99 ${figures["prompt.kv_get_p99_ms"]} ms`,
    );
    console.log(
      `  GET prompt ×${REQUESTS} with nothing kept (every request reads and builds the prompt): p50 ${figures["prompt.uncached_p50_ms"]} ms, p99 ${figures["prompt.uncached_p99_ms"]} ms`,
    );
    console.log(
      `  ${TURNS} turns (publish a message, then GET prompt; 1–${TURN_SNAPSHOT_EVERY} messages newer than the snapshot, last prompt ${Math.round(newest / 1000)} KB): p50 ${figures["prompt.turn_p50_ms"]} ms, p99 ${figures["prompt.turn_p99_ms"]} ms`,
    );
    // Over every request to the first server: how its prompts were served and read.
    const counters = (await metrics.render())
      .split("\n")
      .filter((l) => /^outline_prompt_(cache|newer_reads)_total/.test(l))
      .map((l) => l.replace(/^outline_prompt_/, ""));
    console.log(`  ${counters.join(", ")}`);
    return figures;
  } finally {
    http.close();
    await server.stop();
  }
}
