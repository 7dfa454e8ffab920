// Prompt latency on the prompt-builder's HTTP server over a private nats-server, for threads at
// a full outline and a full tail (default settings, just before a cut: the largest prompts).
//
// The headline is a real turn (issue 49): one new message is published to a thread, then an
// agent asks at once for that thread's prompt, which must hold it (only the GET is timed), over
// THREADS threads and three agents by turns, while the worker applies that very message: its id
// claimed in the worker's id index and the thread's new snapshot written, both sent as the GET
// is, as a worker writes a snapshot a round trip or two after a message arrives. Each turn is
// followed by a raw KV get of the same thread's snapshot from the same client, the baseline in
// the same run, then by a GET of a fixed body of the prompt's size (the HTTP transfer floor of
// this host and harness). ROUNDS rounds; each figure is the median of its rounds' quantiles.
// Every turn's body must end with the message just published; every CHECK_EVERY-th is also
// held to the body a second server that keeps nothing builds from scratch (byte for byte when
// both read the same snapshot; else the same messages, unless the message made a cut).
// As deployed, each part is a process or thread of its own: the prompt-builder (and the server
// keeping nothing, which also serves the floor) in child processes (support/prompt-server.ts);
// the worker on a thread (support/applier.ts), which computes each message applied by the core
// before the turn (untimed) and writes it during the turn; this process is the chat platform and
// the agent. Every timed GET ends when the client has received the whole body, as chunks (the
// KV get baseline does not decode its value either).
// Beside it: the same request repeated with nothing changed (served from the body kept), and
// requests to the server that keeps nothing (every request reads and builds the whole prompt).
// BENCH_PROFILE=<file.cpuprofile>: a CPU profile of this process's turns, and the prompt-
// builder's whole run beside it (<file>.server/).
import { Agent } from "node:http";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { subjects } from "../services/nats/subjects.ts";
import { ensureWorkerBuckets } from "../services/nats/buckets.ts";
import { startApplier, type ThreadStats } from "./support/applier.ts";
import { BenchChild } from "./support/child.ts";
import { benchMessage } from "./support/load.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer, type BenchServer } from "./support/server.ts";
import { getBytes, getText, median, ms, quantile, timed } from "./support/timing.ts";
import type { Message } from "../shared/events.ts";

const THREADS = Number(process.env.BENCH_PROMPT_THREADS ?? 40);
const AGENTS = ["north", "south", "east"];
/** Turns per round (spread over the threads), and repeated requests per round. */
const TURNS = Number(process.env.BENCH_PROMPT_TURNS ?? 1_000);
const REQUESTS = Number(process.env.BENCH_PROMPT_REQUESTS ?? 300);
const ROUNDS = Number(process.env.BENCH_PROMPT_ROUNDS ?? 1);
const CHECK_EVERY = 10;

/** One bench thread: its name and its next message's number. */
interface BenchThread {
  name: string;
  next: number;
}

interface Served {
  messages: { content: unknown }[];
  stats: { snapshotSeq: number };
}

/** A message's number, which leads its text (support/load.ts). */
const numberOf = (message: Message) => message.text.slice(0, message.text.indexOf(":"));

/**
 * Whether the body's last message is `message`, read from its last chunks alone (the last
 * message and the stats; a bench message is a few KB at most): cheap enough for every turn.
 */
function endsWith(body: readonly Buffer[], message: Message): boolean {
  const end = Buffer.concat(body.slice(-2));
  // Inside a JSON string every '"' is escaped: this finds the last message's start.
  const last = end.lastIndexOf('{"role":');
  if (last < 0) return false;
  return new RegExp(`"content":"(\\w+: )?${numberOf(message)}: `).test(end.toString("utf8", last));
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
  if (typeof last !== "string" || !new RegExp(`^(\\w+: )?${numberOf(message)}: `).test(last))
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

/** A prompt-builder of bench/support/prompt-server.ts, listening. */
interface PromptServer {
  child: BenchChild;
  port: number;
  floorPort: number;
}

async function startPromptServer(
  server: BenchServer,
  name: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<PromptServer> {
  const script = fileURLToPath(new URL("./support/prompt-server.ts", import.meta.url));
  const child = new BenchChild(
    name,
    script,
    {
      ...process.env,
      BENCH_NATS_URL: server.url,
      BENCH_NAMES: JSON.stringify(server.names),
      ...env,
    },
    nodeArgs,
  );
  const line = await child.waitFor((l) => l.startsWith("listening "));
  const [port, floorPort] = line.split(" ").slice(1).map(Number) as [number, number];
  return { child, port, floorPort };
}

/** The prompt-builder's CPU seconds so far; a bench that cannot read them fails, not guesses. */
function cpuOf(server: PromptServer): number {
  const cpu = server.child.cpuSeconds();
  if (cpu === undefined) throw new Error("bench prompt reads the prompt-builder's CPU from /proc");
  return cpu;
}

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("prompt");
  const children: BenchChild[] = [];
  const http = { close: () => {} };
  let stopApplier = () => Promise.resolve();
  try {
    const nc = await server.connect("prompt-client");
    const js = jetstream(nc);
    const s = subjects(server.names);
    // Direct gets, the fastest read the bucket allows: the baseline the prompt is held to.
    const kv = await new Kvm(js).open(server.names.kvBucket, { allow_direct: true });
    // The worker's id index, as a worker creates it: a turn asks it about its new message.
    await ensureWorkerBuckets(js, await jetstreamManager(nc), server.names);
    const applier = await startApplier(server.url, server.names);
    stopApplier = () => applier.stop();
    const threads: BenchThread[] = [];
    let firstStats: ThreadStats | undefined;
    for (let t = 0; t < THREADS; t++) {
      const stats = await applier.build(`full${t}`);
      firstStats ??= stats;
      threads.push({ name: `full${t}`, next: stats.next });
    }
    const first = threads[0] as BenchThread;

    const profile = process.env.BENCH_PROFILE;
    const kept = await startPromptServer(
      server,
      "prompt-builder",
      {},
      profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}.server`] : [],
    );
    children.push(kept.child);
    // The same server keeping nothing: what a request costs when it reads and builds it all.
    const uncached = await startPromptServer(server, "prompt-builder keeping nothing", {
      BENCH_PROMPT_CACHE_BYTES: "0",
      BENCH_FLOOR: "1",
    });
    children.push(uncached.child);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    http.close = () => agent.destroy();
    const pathOf = (thread: string, who: string) => `/threads/${thread}/prompt?agent=${who}`;
    const repeated = pathOf(first.name, "north");
    const bytes = Buffer.concat(await getBytes(agent, kept.port, repeated)).length;
    // The transfer floor: a body of the prompt's size, built once, over the same kind of socket
    // from a process of its own. What a turn costs beyond it is the reads and the build.
    const floorPath = `/?bytes=${bytes}`;
    // Warm-up of both servers (the JIT, the connection, the message caches).
    for (const t of threads) {
      for (const who of AGENTS) {
        await getBytes(agent, kept.port, pathOf(t.name, who));
        await getBytes(agent, uncached.port, pathOf(t.name, who));
      }
    }
    await timed(50, () => getBytes(agent, kept.port, repeated));
    await timed(50, () => getBytes(agent, uncached.floorPort, floorPath));

    const rounds: Record<string, number>[] = [];
    let lastSeq = (await (await jetstreamManager(nc)).streams.info(server.names.chatStream)).state
      .last_seq;
    let turnNo = 0;
    let checked = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const turns: number[] = [];
      const gets: number[] = [];
      const floors: number[] = [];
      // CPU of the prompt-builder over the round (it serves the turns alone meanwhile), and of
      // this process over its KV gets: on a loaded host the steadier figures, since waiting for
      // a core adds wall time, not CPU.
      const serverCpu = cpuOf(kept);
      let getCpuUs = 0;
      const checks: (() => void)[] = [];
      const realTurns = async () => {
        for (let i = 0; i < TURNS; i++, turnNo++) {
          const thread = threads[turnNo % THREADS] as BenchThread;
          const who = AGENTS[Math.floor(turnNo / THREADS) % AGENTS.length] as string;
          const message: Message = benchMessage(thread.name, thread.next++);
          // The worker's work on it, staged before the publish (untimed: its CPU is another
          // process's) on the sequence the publish will get: this bench alone writes CHAT.
          let cut = await applier.stage(thread.name, message, lastSeq + 1);
          const { seq } = await js.publish(s.messageCreated(thread.name), JSON.stringify(message), {
            msgID: message.id,
          });
          if (seq !== lastSeq + 1) cut = await applier.stage(thread.name, message, seq);
          lastSeq = seq;
          const path = pathOf(thread.name, who);
          const started = performance.now();
          // The worker applies the message as the prompt is asked: the id claimed on arrival,
          // then the new snapshot written.
          const applied = applier.apply(thread.name);
          const body = await getBytes(agent, kept.port, path);
          turns.push(performance.now() - started);
          if (!endsWith(body, message))
            throw new Error(
              `turn ${turnNo}: the prompt served for ${path} does not end with ${message.id}`,
            );
          const getCpu = process.cpuUsage();
          const got = performance.now();
          await kv.get(thread.name);
          gets.push(performance.now() - got);
          const used = process.cpuUsage(getCpu);
          getCpuUs += used.user + used.system;
          const floorAt = performance.now();
          await getBytes(agent, uncached.floorPort, floorPath);
          floors.push(performance.now() - floorAt);
          await applied;
          if (turnNo % CHECK_EVERY === 0) {
            // Compared after the round: parsing two prompts here would leave this process
            // garbage to collect during the next turns' timings.
            const built = Buffer.concat(await getBytes(agent, uncached.port, path));
            const args = [turnNo, path, message, cut, Buffer.concat(body), built] as const;
            checks.push(() => check(...args));
          }
        }
      };
      if (round === 0) await profiled(realTurns);
      else await realTurns();
      const turnCpuMs = ((cpuOf(kept) - serverCpu) * 1_000) / TURNS;
      for (const checkTurn of checks) checkTurn();
      checked += checks.length;
      turns.sort((a, b) => a - b);
      gets.sort((a, b) => a - b);
      floors.sort((a, b) => a - b);
      const cachedTimes = await timed(REQUESTS, () => getBytes(agent, kept.port, repeated));
      const uncachedTimes = await timed(REQUESTS, () => getBytes(agent, uncached.port, repeated));
      rounds.push({
        turn_p50: quantile(turns, 0.5),
        turn_p99: quantile(turns, 0.99),
        turn_cpu: turnCpuMs,
        kv_get_cpu: getCpuUs / 1_000 / TURNS,
        kv_get_p50: quantile(gets, 0.5),
        kv_get_p99: quantile(gets, 0.99),
        floor_p50: quantile(floors, 0.5),
        floor_p99: quantile(floors, 0.99),
        cached_p50: quantile(cachedTimes, 0.5),
        cached_p99: quantile(cachedTimes, 0.99),
        uncached_p50: quantile(uncachedTimes, 0.5),
        uncached_p99: quantile(uncachedTimes, 0.99),
      });
    }
    const med = (key: string) => ms(median(rounds.map((r) => r[key] as number)));
    const stats = firstStats as ThreadStats;
    const figures: Record<string, number> = {
      "prompt.threads": THREADS,
      "prompt.outline_kb": Math.round(stats.outlineBytes / 1000),
      "prompt.tail_tokens": stats.tailTokens,
      "prompt.tail_messages": stats.tailMessages,
      "prompt.response_kb": Math.round(bytes / 1000),
      "prompt.turn_p50_ms": med("turn_p50"),
      "prompt.turn_p99_ms": med("turn_p99"),
      "prompt.kv_get_p50_ms": med("kv_get_p50"),
      "prompt.kv_get_p99_ms": med("kv_get_p99"),
      "prompt.turn_p99_over_kv_get_p99": Number(
        median(rounds.map((r) => (r.turn_p99 as number) / (r.kv_get_p99 as number))).toFixed(2),
      ),
      // What the host allows: a fixed body's p99 over the KV get's, in the same run.
      "prompt.http_floor_p99_over_kv_get_p99": Number(
        median(rounds.map((r) => (r.floor_p99 as number) / (r.kv_get_p99 as number))).toFixed(2),
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
      `  ${THREADS} threads of ~${stats.count} messages: outline ${figures["prompt.outline_kb"]} KB (${stats.outlineLines} lines), tail ${figures["prompt.tail_tokens"]} tokens (${stats.tailMessages} messages); prompt ${figures["prompt.response_kb"]} KB`,
    );
    console.log(
      `  real turns (${ROUNDS} rounds of ${TURNS}: publish a message, then GET prompt for one of ${AGENTS.length} agents; the worker applying each message as the prompt is asked): p50 ${figures["prompt.turn_p50_ms"]} ms, p99 ${figures["prompt.turn_p99_ms"]} ms (rounds ${perRound("turn_p99")}; target ≤ 10 ms and ≤ 2× the KV get); raw KV get after each: p50 ${figures["prompt.kv_get_p50_ms"]} ms, p99 ${figures["prompt.kv_get_p99_ms"]} ms (rounds ${perRound("kv_get_p99")}); p99 ratio ${figures["prompt.turn_p99_over_kv_get_p99"]}×; the prompt-builder's CPU per turn ${figures["prompt.turn_cpu_ms"]} ms, the client's per KV get ${figures["prompt.kv_get_cpu_ms"]} ms; every turn's prompt ended with its message, ${checked} checked against a prompt built from scratch`,
    );
    console.log(
      `  transfer floor (a fixed body of ${figures["prompt.response_kb"]} KB after each turn, from a process of its own, same kind of socket): p50 ${figures["prompt.http_floor_p50_ms"]} ms, p99 ${figures["prompt.http_floor_p99_ms"]} ms (rounds ${perRound("floor_p99")}; ${figures["prompt.http_floor_p99_over_kv_get_p99"]}× the KV get's)`,
    );
    console.log(
      `  the same request repeated (${REQUESTS} a round, the body kept): p50 ${figures["prompt.cached_p50_ms"]} ms, p99 ${figures["prompt.cached_p99_ms"]} ms; a server keeping nothing: p50 ${figures["prompt.uncached_p50_ms"]} ms, p99 ${figures["prompt.uncached_p99_ms"]} ms`,
    );
    // Over every request to the prompt-builder: how prompts were served and read.
    const counters = (await getText(agent, kept.port, "/metrics"))
      .split("\n")
      .filter((l) => /^outline_prompt_(cache|newer_reads)_total/.test(l))
      .map((l) => l.replace(/^outline_prompt_/, ""));
    console.log(`  ${counters.join(", ")}`);
    return figures;
  } finally {
    http.close();
    await Promise.allSettled(children.map((c) => c.stop()));
    await stopApplier();
    await server.stop();
  }
}
