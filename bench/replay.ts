// Replay vs raw read, side by side on one private nats-server. CHAT and HISTORY are filled as the
// worker would have left them (messages round-robin over threads; every node the pure core builds
// published to HISTORY), then `outline replay --all` rebuilds every outline from the streams
// (and, measured too, `--all --into BUCKET` writes each), while the baseline merely reads the
// same two streams at once through the replay's own ordered read with a no-op callback: the
// ratio is what the replay's work costs, not a reader's. nats.js's ordered consumer reading the
// same is printed beside it. All run in a child Node (support/replay-rounds.ts). A summarizer is
// handed to the replay and counts its calls: a replay must make none.
import { jetstream } from "@nats-io/jetstream";
import type { Message } from "../shared/events.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { subjects } from "../services/nats/subjects.ts";
import { replayWithNodes } from "../test/support/outline-fixture.ts";
import { perSecond, publishAll, roundRobin, type Outgoing } from "./support/load.ts";
import { BenchChild } from "./support/child.ts";
import { ROUND_LINE, type RoundMeasure } from "./support/replay-round.ts";
import { startBenchServer } from "./support/server.ts";

const THREADS = Number(process.env.BENCH_REPLAY_THREADS ?? 100);
const MESSAGES = Number(process.env.BENCH_REPLAY_MESSAGES ?? 50_000);
/** Rounds per side, alternating; the best of each is compared (more: steadier on a busy host). */
const ROUNDS = Number(process.env.BENCH_REPLAY_ROUNDS ?? 5);

const encoder = new TextEncoder();

export async function run(): Promise<Record<string, number>> {
  const server = await startBenchServer("replay");
  try {
    const nc = await server.connect("fill");
    const js = jetstream(nc);
    const s = subjects(server.names);

    // CHAT as the platform fills it, then HISTORY as the worker would have (the pure core with
    // fake summaries decides every node).
    const load = roundRobin(MESSAGES, THREADS, (t) => s.messageCreated(t));
    const seqs = await publishAll(js, load);
    const logs = new Map<string, { message: Message; seq: number }[]>();
    const decoder = new TextDecoder();
    for (const [i, m] of load.entries()) {
      const log = logs.get(m.thread) ?? [];
      log.push({ message: JSON.parse(decoder.decode(m.data)) as Message, seq: seqs[i] as number });
      logs.set(m.thread, log);
    }
    const nodes: Outgoing[] = [];
    for (const [thread, log] of logs) {
      for (const node of replayWithNodes(thread, DEFAULT_SETTINGS, log).nodes) {
        nodes.push({
          subject: s.historyNode(thread, node.level, node.index),
          msgID: s.historyMsgId(thread, node.level, node.index),
          thread,
          data: encoder.encode(JSON.stringify(node)),
        });
      }
    }
    await publishAll(js, nodes);
    console.log(
      `  filled: ${MESSAGES} messages over ${THREADS} threads on CHAT, ${nodes.length} nodes on HISTORY`,
    );

    // Each side ROUNDS times, alternating, best of each: the machine is shared and its load
    // drifts. Both sides run in a Node of their own, as `outline replay` does.
    // BENCH_BASE_ROOT=<checkout>: that checkout's replay runs too, one round of each side at a
    // time, alternating, to compare two versions in one run.
    const base = process.env.BENCH_BASE_ROOT;
    const oneRound = async (script: string): Promise<RoundMeasure> => {
      const child = new BenchChild("replay rounds", script, {
        ...process.env,
        NATS_URL: server.url,
        BENCH_SERVER_PID: String(server.pid ?? ""),
        BENCH_REPLAY_ROUNDS: "1",
      });
      try {
        const line = await child.waitFor((l) => l.startsWith(ROUND_LINE), 300_000);
        await child.exited;
        return JSON.parse(line.slice(ROUND_LINE.length)) as RoundMeasure;
      } finally {
        await child.stop();
      }
    };
    let best: RoundMeasure | undefined;
    let bestRaw: RoundMeasure["raw"] | undefined;
    let bestNatsjs: RoundMeasure["natsjs"] | undefined;
    let bestInto: RoundMeasure["into"] | undefined;
    let bestBase: RoundMeasure | undefined;
    let calls = 0;
    for (let round = 0; round < ROUNDS; round++) {
      if (base && round % 2 === 1) {
        const b = await oneRound(`${base}/bench/support/replay-rounds.ts`);
        if (!bestBase || b.replay.ms < bestBase.replay.ms) bestBase = b;
        console.log(
          `  round ${round + 1} base: replay ${(b.replay.ms / 1000).toFixed(2)} s, ${(b.replay.cpuMs / 1000).toFixed(2)} CPU s`,
        );
      }
      const m = await oneRound("bench/support/replay-rounds.ts");
      calls += m.replay.calls;
      if (!bestRaw || m.raw.ms < bestRaw.ms) bestRaw = m.raw;
      if (!bestNatsjs || m.natsjs.ms < bestNatsjs.ms) bestNatsjs = m.natsjs;
      if (!bestInto || m.into.ms < bestInto.ms) bestInto = m.into;
      if (!best || m.replay.ms < best.replay.ms) best = m;
      console.log(
        `  round ${round + 1}: raw read ${(m.raw.ms / 1000).toFixed(2)} s (nats.js ${(m.natsjs.ms / 1000).toFixed(2)} s), replay ${(m.replay.ms / 1000).toFixed(2)} s, ${(m.replay.cpuMs / 1000).toFixed(2)} CPU s (${(m.raw.ms / m.replay.ms).toFixed(3)}), --into ${(m.into.ms / 1000).toFixed(2)} s (${(m.raw.ms / m.into.ms).toFixed(3)})`,
      );
      if (base && round % 2 === 0) {
        const b = await oneRound(`${base}/bench/support/replay-rounds.ts`);
        if (!bestBase || b.replay.ms < bestBase.replay.ms) bestBase = b;
        console.log(
          `  round ${round + 1} base: replay ${(b.replay.ms / 1000).toFixed(2)} s, ${(b.replay.cpuMs / 1000).toFixed(2)} CPU s`,
        );
      }
    }
    if (!best || !bestRaw || !bestNatsjs || !bestInto)
      throw new Error("the replay bench ran no round (BENCH_REPLAY_ROUNDS)");
    const read = bestRaw.read;
    const rawMs = bestRaw.ms;
    const replayMs = best.replay.ms;
    const rawCpu = { process: bestRaw.cpuMs, server: bestRaw.serverCpuMs };
    const replayCpu = { process: best.replay.cpuMs, server: best.replay.serverCpuMs };

    const rawRate = perSecond(read, rawMs);
    const replayRate = perSecond(read, replayMs);
    const ratio = Number((rawMs / replayMs).toFixed(3));
    const intoRatio = Number((rawMs / bestInto.ms).toFixed(3));
    const natsjsRatio = Number((bestNatsjs.ms / replayMs).toFixed(3));
    console.log(
      `  raw read (own ordered read, no-op) ${read} events in ${(rawMs / 1000).toFixed(2)} s (${rawRate}/s); replay ${(replayMs / 1000).toFixed(2)} s (${replayRate}/s); ratio ${ratio} (target ≥ 0.5); with --into ${(bestInto.ms / 1000).toFixed(2)} s, ratio ${intoRatio}; model calls ${calls}`,
    );
    console.log(
      `  nats.js's ordered consumer read the same in ${(bestNatsjs.ms / 1000).toFixed(2)} s (${perSecond(read, bestNatsjs.ms)}/s): the replay against it ${natsjsRatio} (the headline until issue 20)`,
    );
    // One JS thread does all of either side's work (nats-server runs beside it): CPU per event
    // shows where the ratio comes from, steadier than wall time on a shared machine.
    const cpuS = (ms: number) => (Number.isNaN(ms) ? "?" : (ms / 1000).toFixed(2));
    console.log(
      `  raw read used ${cpuS(rawCpu.process)} CPU s in its process and ${cpuS(rawCpu.server)} in nats-server; ` +
        `replay ${cpuS(replayCpu.process)} and ${cpuS(replayCpu.server)} (best rounds)`,
    );
    if (bestBase) {
      console.log(
        `  base ${base}: best replay ${(bestBase.replay.ms / 1000).toFixed(2)} s; ours/base time ${(replayMs / bestBase.replay.ms).toFixed(3)}`,
      );
    }
    return {
      ...(bestBase ? { "replay.base_replay_ms": Math.round(bestBase.replay.ms) } : {}),
      "replay.replay_ms": Math.round(replayMs),
      "replay.messages": MESSAGES,
      "replay.threads": THREADS,
      "replay.history_nodes": nodes.length,
      "replay.raw_events_per_sec": rawRate,
      "replay.replay_events_per_sec": replayRate,
      "replay.ratio": ratio,
      "replay.into_events_per_sec": perSecond(read, bestInto.ms),
      "replay.into_ratio": intoRatio,
      "replay.natsjs_read_events_per_sec": perSecond(read, bestNatsjs.ms),
      "replay.ratio_vs_natsjs_read": natsjsRatio,
      "replay.model_calls": calls,
      "replay.raw_cpu_ms": Math.round(rawCpu.process),
      "replay.replay_cpu_ms": Math.round(replayCpu.process),
      "replay.into_cpu_ms": Math.round(bestInto.cpuMs),
      "replay.raw_server_cpu_ms": Math.round(rawCpu.server),
      "replay.replay_server_cpu_ms": Math.round(replayCpu.server),
    };
  } finally {
    await server.stop();
  }
}
