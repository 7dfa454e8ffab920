// Prompt latency on the prompt-builder's HTTP server over a private nats-server, for threads at
// a full outline and a full tail (default settings, just before a cut: the largest prompts).
//
// The headline is a real turn (issue 49): one new message is published to a thread, then an
// agent asks at once for that thread's prompt, which must hold it (only the GET is timed), over
// THREADS threads and three agents by turns, while the worker applies that very message: its id
// claimed in the worker's id index and the thread's new snapshot written (computed beforehand
// through the pure core, as the worker would, so its CPU is not this process's), both sent as
// the GET is, as a worker writes a snapshot a round trip or two after a message arrives. Each
// turn is followed by a raw KV get of the same thread's snapshot on the same connection, the
// baseline in the same run, then by a GET of a fixed body of the prompt's size (the HTTP
// transfer floor of this host and harness). ROUNDS rounds; each figure is the median of its
// rounds' quantiles. Every CHECK_EVERY-th turn the body served is checked: its last message is
// the one just published, and it is the body a second server that keeps nothing builds from
// scratch (byte for byte when both read the same snapshot; else the same messages, unless the
// message made a cut).
// Every timed GET (turn, floor, repeated, keeping nothing) ends when the client has received the
// whole body, as chunks: client and server share this process, so a decode of the 284 KB to a
// string (and its garbage) would be the bench's cost in the server's time; the KV get baseline
// does not decode its value either.
// Beside it: the same request repeated with nothing changed (served from the body kept), and
// requests to the server that keeps nothing (every request reads and builds the whole prompt).
import { Agent, createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { Message } from "../shared/events.ts";
import { answerAll } from "../shared/replay.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import { appendMessage, initialThreadState, type ThreadState } from "../shared/thread.ts";
import { estimateMessageTokens } from "../shared/tokens.ts";
import { subjects, type Subjects } from "../services/nats/subjects.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import { createReader } from "../services/nats/reader.ts";
import { ensureWorkerBuckets } from "../services/nats/buckets.ts";
import { startApplier } from "./support/applier.ts";
import { benchMessage, publishAll, type Outgoing } from "./support/load.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer } from "./support/server.ts";
import { getBytes, median, ms, quantile, timed } from "./support/timing.ts";

const THREADS = Number(process.env.BENCH_PROMPT_THREADS ?? 40);
const AGENTS = ["north", "south", "east"];
/** Turns per round (spread over the threads), and repeated requests per round. */
const TURNS = Number(process.env.BENCH_PROMPT_TURNS ?? 1_000);
const REQUESTS = Number(process.env.BENCH_PROMPT_REQUESTS ?? 300);
const ROUNDS = Number(process.env.BENCH_PROMPT_ROUNDS ?? 1);
const CHECK_EVERY = 10;
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
 * Messages through the pure core (instant summaries) until the outline is past 80% of its high
 * mark and the tail past 90% of its own, i.e. just before a cut: the largest prompt. Sequences
 * are positions here; the caller renumbers them as stored.
 */
function fullThread(thread: string): { state: ThreadState; messages: Message[] } {
  let state = initialThreadState(thread, DEFAULT_SETTINGS);
  const messages: Message[] = [];
  for (let i = 0; i < 50_000; i++) {
    const message = benchMessage(thread, i);
    messages.push(message);
    state = withMessage(state, message, i + 1);
    if (state.outlineBytes >= 0.8 * OUTLINE_HIGH && tailTokens(state) >= 0.9 * TAIL_HIGH)
      return { state, messages };
  }
  throw new Error(
    "the bench thread never reached a full outline and a full tail in 50,000 messages",
  );
}

/** One bench thread: its core state as last written to KV, and the next message's number. */
interface BenchThread {
  name: string;
  state: ThreadState;
  next: number;
}

/** Stores a thread's messages, then its state rebuilt on their stored sequences, in KV. */
async function storeThread(
  js: JetStreamClient,
  kv: KV,
  s: Subjects,
  name: string,
): Promise<BenchThread> {
  const { messages } = fullThread(name);
  const encoder = new TextEncoder();
  const seqs = await publishAll(
    js,
    messages.map((m): Outgoing => ({
      subject: s.messageCreated(name),
      msgID: m.id,
      thread: name,
      data: encoder.encode(JSON.stringify(m)),
    })),
    1,
  );
  let state = initialThreadState(name, DEFAULT_SETTINGS);
  for (const [i, m] of messages.entries()) state = withMessage(state, m, seqs[i] as number);
  await kv.put(name, JSON.stringify(toSnapshot(state)));
  return { name, state, next: messages.length };
}

interface Served {
  messages: { content: unknown }[];
  stats: { snapshotSeq: number };
}

/**
 * A turn's body holds its new message last, and is what a server keeping nothing builds now:
 * byte for byte when both read the same snapshot; else (this turn read the one before the
 * worker's) the same messages, unless the new message made a cut (the outline then differs).
 */
function check(
  turn: number,
  path: string,
  message: Message,
  cut: boolean,
  served: Buffer,
  built: Buffer,
): void {
  const got = JSON.parse(served.toString("utf8")) as Served;
  const last = got.messages.at(-1)?.content;
  const number = message.text.slice(0, message.text.indexOf(":"));
  if (typeof last !== "string" || !new RegExp(`^(\\w+: )?${number}: `).test(last))
    throw new Error(`turn ${turn}: the prompt served for ${path} does not end with ${message.id}`);
  const fresh = JSON.parse(built.toString("utf8")) as Served;
  const same =
    got.stats.snapshotSeq === fresh.stats.snapshotSeq
      ? served.equals(built)
      : cut || JSON.stringify(got.messages) === JSON.stringify(fresh.messages);
  if (!same)
    throw new Error(
      `turn ${turn}: the prompt served for ${path} differs from one built from scratch`,
    );
}

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("prompt");
  const http = { close: () => {} };
  let stopApplier = () => Promise.resolve();
  try {
    const nc = await server.connect("prompt-builder");
    const js = jetstream(nc);
    const s = subjects(server.names);
    // Direct gets, the fastest read the bucket allows: the baseline the prompt is held to.
    const kv = await new Kvm(js).open(server.names.kvBucket, { allow_direct: true });
    // The worker's id index, as a worker creates it: a turn asks it about its new message.
    await ensureWorkerBuckets(js, await jetstreamManager(nc), server.names);
    const applier = await startApplier(server.url, server.names);
    stopApplier = () => applier.stop();
    const threads: BenchThread[] = [];
    for (let t = 0; t < THREADS; t++) threads.push(await storeThread(js, kv, s, `full${t}`));
    const first = threads[0] as BenchThread;

    const metrics = createMetrics(nc, {
      workerSubject: `${server.names.apiPrefix}.metrics.worker`,
    });
    const serve = (promptCacheBytes?: number) =>
      createHttpServer({
        operations: createOperations(
          createReader(nc, server.names, {
            onNewerRead: (path, count) => metrics.newerRead(path, count),
          }),
          {
            tailCap: 2 * TAIL_HIGH,
            onPromptCache: (hit) => metrics.promptCache(hit),
            ...(promptCacheBytes === undefined ? {} : { promptCacheBytes }),
          },
        ),
        metrics,
        health: natsHealth(nc),
        token: undefined,
        log: () => {},
      });
    const httpServer = serve();
    const port = (await listen(httpServer, "127.0.0.1", 0)).port;
    // The same server keeping nothing: what a request costs when it reads and builds it all.
    const uncachedServer = serve(0);
    const uncachedPort = (await listen(uncachedServer, "127.0.0.1", 0)).port;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const pathOf = (thread: string, who: string) => `/threads/${thread}/prompt?agent=${who}`;
    const repeated = pathOf(first.name, "north");
    const bytes = Buffer.concat(await getBytes(agent, port, repeated)).length;
    // The transfer floor: a body of the prompt's size, built once, over the same kind of socket
    // in this process. What a turn costs beyond it is the reads and the build.
    const fixed = Buffer.alloc(bytes, "x");
    const floorServer = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": fixed.length });
      res.end(fixed);
    });
    const floorPort = (await listen(floorServer, "127.0.0.1", 0)).port;
    http.close = () => {
      agent.destroy();
      httpServer.close();
      uncachedServer.close();
      floorServer.close();
    };
    // Warm-up of both servers (the JIT, the connection, the message caches).
    for (const t of threads) {
      for (const who of AGENTS) {
        await getBytes(agent, port, pathOf(t.name, who));
        await getBytes(agent, uncachedPort, pathOf(t.name, who));
      }
    }
    await timed(50, () => getBytes(agent, port, repeated));

    const rounds: Record<string, number>[] = [];
    let lastSeq = (await (await jetstreamManager(nc)).streams.info(server.names.chatStream)).state
      .last_seq;
    let turnNo = 0;
    let checked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const turns: number[] = [];
      const gets: number[] = [];
      const floors: number[] = [];
      // CPU of this process (the prompt-builder and its HTTP client) over the timed GETs: on a
      // loaded host the steadier figure, since waiting for a core adds wall time, not CPU.
      let turnCpuUs = 0;
      let getCpuUs = 0;
      const realTurns = async () => {
        for (let i = 0; i < TURNS; i++, turnNo++) {
          const thread = threads[turnNo % THREADS] as BenchThread;
          const who = AGENTS[Math.floor(turnNo / THREADS) % AGENTS.length] as string;
          const message = benchMessage(thread.name, thread.next++);
          // The worker's work on it, computed before the publish (untimed: its CPU is another
          // process's) on the sequence the publish will get: this bench alone writes CHAT.
          const before = thread.state;
          const next = (at: number) => {
            const state = withMessage(before, message, at);
            return { at, state, snapshot: JSON.stringify(toSnapshot(state)) };
          };
          // Staged on the worker's thread before the publish too (the snapshot's copy is made
          // now), so the GET follows the publish at once.
          const stage = (at: number) => {
            const computed = next(at);
            const job = { thread: thread.name, id: message.id, seq: at };
            return { ...computed, work: applier.stage({ ...job, snapshot: computed.snapshot }) };
          };
          let after = stage(lastSeq + 1);
          const { seq } = await js.publish(s.messageCreated(thread.name), JSON.stringify(message), {
            msgID: message.id,
          });
          lastSeq = seq;
          if (seq !== after.at) after = stage(seq);
          thread.state = after.state;
          const work = after.work;
          const path = pathOf(thread.name, who);
          const cpu = process.cpuUsage();
          const started = performance.now();
          // The worker applies the message as the prompt is asked: the id claimed on arrival,
          // then the new snapshot written.
          const applied = work.start();
          const body = await getBytes(agent, port, path);
          turns.push(performance.now() - started);
          const turnCpu = process.cpuUsage(cpu);
          turnCpuUs += turnCpu.user + turnCpu.system;
          const getCpu = process.cpuUsage();
          const got = performance.now();
          await kv.get(thread.name);
          gets.push(performance.now() - got);
          const used = process.cpuUsage(getCpu);
          getCpuUs += used.user + used.system;
          const floorAt = performance.now();
          await getBytes(agent, floorPort, "/");
          floors.push(performance.now() - floorAt);
          await applied;
          if (turnNo % CHECK_EVERY === 0) {
            check(
              turnNo,
              path,
              message,
              thread.state.boundary !== before.boundary,
              Buffer.concat(body),
              Buffer.concat(await getBytes(agent, uncachedPort, path)),
            );
            checked += 1;
          }
        }
      };
      if (round === 0) await profiled(realTurns);
      else await realTurns();
      turns.sort((a, b) => a - b);
      gets.sort((a, b) => a - b);
      floors.sort((a, b) => a - b);
      const cached = await timed(REQUESTS, () => getBytes(agent, port, repeated));
      const uncached = await timed(REQUESTS, () => getBytes(agent, uncachedPort, repeated));
      rounds.push({
        turn_p50: quantile(turns, 0.5),
        turn_p99: quantile(turns, 0.99),
        turn_cpu: turnCpuUs / 1_000 / TURNS,
        kv_get_cpu: getCpuUs / 1_000 / TURNS,
        kv_get_p50: quantile(gets, 0.5),
        kv_get_p99: quantile(gets, 0.99),
        floor_p50: quantile(floors, 0.5),
        floor_p99: quantile(floors, 0.99),
        cached_p50: quantile(cached, 0.5),
        cached_p99: quantile(cached, 0.99),
        uncached_p50: quantile(uncached, 0.5),
        uncached_p99: quantile(uncached, 0.99),
      });
    }
    const med = (key: string) => ms(median(rounds.map((r) => r[key] as number)));
    const state = first.state;
    const figures: Record<string, number> = {
      "prompt.threads": THREADS,
      "prompt.outline_kb": Math.round(state.outlineBytes / 1000),
      "prompt.tail_tokens": tailTokens(state),
      "prompt.tail_messages": state.tail.length,
      "prompt.response_kb": Math.round(bytes / 1000),
      "prompt.turn_p50_ms": med("turn_p50"),
      "prompt.turn_p99_ms": med("turn_p99"),
      "prompt.kv_get_p50_ms": med("kv_get_p50"),
      "prompt.kv_get_p99_ms": med("kv_get_p99"),
      "prompt.turn_p99_over_kv_get_p99": Number(
        median(rounds.map((r) => (r.turn_p99 as number) / (r.kv_get_p99 as number))).toFixed(2),
      ),
      "prompt.http_floor_p50_ms": med("floor_p50"),
      "prompt.http_floor_p99_ms": med("floor_p99"),
      "prompt.turn_cpu_ms": med("turn_cpu"),
      "prompt.kv_get_cpu_ms": med("kv_get_cpu"),
      "prompt.cached_p50_ms": med("cached_p50"),
      "prompt.cached_p99_ms": med("cached_p99"),
      "prompt.uncached_p50_ms": med("uncached_p50"),
      "prompt.uncached_p99_ms": med("uncached_p99"),
    };
    const perRound = (key: string) => rounds.map((r) => ms(r[key] as number)).join(", ");
    console.log(
      `  ${THREADS} threads of ~${state.count} messages: outline ${figures["prompt.outline_kb"]} KB (${state.outline.length} lines), tail ${figures["prompt.tail_tokens"]} tokens (${state.tail.length} messages); prompt ${figures["prompt.response_kb"]} KB`,
    );
    console.log(
      `  real turns (${ROUNDS} rounds of ${TURNS}: publish a message, then GET prompt for one of ${AGENTS.length} agents; the worker applying each message as the prompt is asked): p50 ${figures["prompt.turn_p50_ms"]} ms, p99 ${figures["prompt.turn_p99_ms"]} ms (rounds ${perRound("turn_p99")}; target ≤ 10 ms and ≤ 2× the KV get); raw KV get after each: p50 ${figures["prompt.kv_get_p50_ms"]} ms, p99 ${figures["prompt.kv_get_p99_ms"]} ms (rounds ${perRound("kv_get_p99")}); CPU per turn ${figures["prompt.turn_cpu_ms"]} ms, per KV get ${figures["prompt.kv_get_cpu_ms"]} ms; ${checked} turns checked against a prompt built from scratch`,
    );
    console.log(
      `  transfer floor (a fixed body of ${figures["prompt.response_kb"]} KB after each turn, same process, same kind of socket): p50 ${figures["prompt.http_floor_p50_ms"]} ms, p99 ${figures["prompt.http_floor_p99_ms"]} ms (rounds ${perRound("floor_p99")})`,
    );
    console.log(
      `  the same request repeated (${REQUESTS} a round, the body kept): p50 ${figures["prompt.cached_p50_ms"]} ms, p99 ${figures["prompt.cached_p99_ms"]} ms; a server keeping nothing: p50 ${figures["prompt.uncached_p50_ms"]} ms, p99 ${figures["prompt.uncached_p99_ms"]} ms`,
    );
    // Over every request to both servers: how prompts were served and read.
    const counters = (await metrics.render())
      .split("\n")
      .filter((l) => /^outline_prompt_(cache|newer_reads)_total/.test(l))
      .map((l) => l.replace(/^outline_prompt_/, ""));
    console.log(`  ${counters.join(", ")}`);
    return figures;
  } finally {
    http.close();
    await stopApplier();
    await server.stop();
  }
}
