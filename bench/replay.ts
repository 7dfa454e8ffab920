// Replay vs raw read, side by side on one private nats-server. CHAT and HISTORY are filled as the
// worker would have left them (messages round-robin over threads; every node the pure core builds
// published to HISTORY), then `outline replay --all` rebuilds every outline from the streams, and
// two ordered consumers merely read the same two streams at once. A summarizer is handed to the replay and
// counts its calls: a replay must make none.
import { DeliverPolicy, jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { performance } from "node:perf_hooks";
import type { Message } from "../shared/events.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { run as replayCommand } from "../services/cli/replay/run.ts";
import { subjects } from "../services/nats/subjects.ts";
import { replayWithNodes } from "../test/support/outline-fixture.ts";
import { BENCH_CONFIG_FILE } from "./support/bench-config.ts";
import { InstantSummarizer } from "./support/instant.ts";
import { perSecond, publishAll, roundRobin, type Outgoing } from "./support/load.ts";
import { cpuSecondsOf } from "./support/child.ts";
import { profiled } from "./support/profile.ts";
import { startBenchServer } from "./support/server.ts";

const THREADS = Number(process.env.BENCH_REPLAY_THREADS ?? 100);
const MESSAGES = Number(process.env.BENCH_REPLAY_MESSAGES ?? 50_000);
/** Rounds per side, alternating; the best of each is compared (more: steadier on a busy host). */
const ROUNDS = Number(process.env.BENCH_REPLAY_ROUNDS ?? 2);

/** Reads a whole stream through an ordered consumer and does nothing with it. */
async function readAll(js: JetStreamClient, stream: string): Promise<number> {
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  const total = (await consumer.info()).num_pending;
  if (total === 0) return 0;
  const messages = await consumer.consume({ max_messages: 1_000 });
  let n = 0;
  for await (const m of messages) {
    n += 1;
    if (m.info.pending === 0 && n >= total) break;
  }
  messages.stop();
  return n;
}

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

    // Each side ROUNDS times, alternating, best of each: the machine is shared and its load drifts.
    const summarizer = new InstantSummarizer();
    let rawMs = Infinity;
    let replayMs = Infinity;
    // CPU of each side's best round: in this process (the reader) and in nats-server.
    let rawCpu = { process: NaN, server: NaN };
    let replayCpu = { process: NaN, server: NaN };
    const cpuMark = () => ({ process: process.cpuUsage(), server: cpuSecondsOf(server.pid) });
    const cpuSince = (mark: ReturnType<typeof cpuMark>) => {
      const used = process.cpuUsage(mark.process);
      const serverNow = cpuSecondsOf(server.pid);
      return {
        process: (used.user + used.system) / 1_000,
        server:
          serverNow === undefined || mark.server === undefined
            ? NaN
            : (serverNow - mark.server) * 1_000,
      };
    };
    let read = 0;
    let calls = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // The limit: an ordered consumer on each stream, both read at once (the replay reads CHAT
      // while HISTORY is still coming in, so the baseline overlaps its reads the same way).
      const rawMark = cpuMark();
      const rawStart = performance.now();
      const counts = await Promise.all([
        readAll(js, server.names.historyStream),
        readAll(js, server.names.chatStream),
      ]);
      read = counts[0] + counts[1];
      const rawRound = performance.now() - rawStart;
      if (rawRound < rawMs) [rawMs, rawCpu] = [rawRound, cpuSince(rawMark)];

      // Ours: the replay command, as `outline replay --all` runs it.
      let out = "";
      const sink = { write: (text: string) => void (out += text) };
      const replayMark = cpuMark();
      const replayStart = performance.now();
      const code = await profiled(() =>
        replayCommand(["--all"], {
          env: { NATS_URL: server.url, OUTLINE_CONFIG: BENCH_CONFIG_FILE },
          stdout: sink,
          stderr: { write: () => {} },
          summarizer,
        }),
      );
      const replayRound = performance.now() - replayStart;
      if (replayRound < replayMs) [replayMs, replayCpu] = [replayRound, cpuSince(replayMark)];
      if (code !== 0) throw new Error(`outline replay --all exited ${code}; its output:\n${out}`);
      console.log(
        `  round ${round + 1}: raw read ${(rawRound / 1000).toFixed(2)} s, replay ${(replayRound / 1000).toFixed(2)} s (${(rawRound / replayRound).toFixed(3)})`,
      );
      // The command's own count of model calls, and ours of the summarizer it was handed.
      const reported = Number(/model calls: (\d+)/.exec(out)?.[1] ?? NaN);
      calls += Number.isNaN(reported) ? 1 : reported;
    }
    calls += summarizer.calls;

    const rawRate = perSecond(read, rawMs);
    const replayRate = perSecond(read, replayMs);
    const ratio = Number((rawMs / replayMs).toFixed(3));
    console.log(
      `  raw read ${read} events in ${(rawMs / 1000).toFixed(2)} s (${rawRate}/s); replay ${(replayMs / 1000).toFixed(2)} s (${replayRate}/s); ratio ${ratio} (target ≥ 0.5); model calls ${calls}`,
    );
    // One JS thread does all of either side's work (nats-server runs beside it): CPU per event
    // shows where the ratio comes from, steadier than wall time on a shared machine.
    const cpuS = (ms: number) => (Number.isNaN(ms) ? "?" : (ms / 1000).toFixed(2));
    console.log(
      `  raw read used ${cpuS(rawCpu.process)} CPU s in this process and ${cpuS(rawCpu.server)} in nats-server; ` +
        `replay ${cpuS(replayCpu.process)} and ${cpuS(replayCpu.server)} (best rounds)`,
    );
    return {
      "replay.messages": MESSAGES,
      "replay.threads": THREADS,
      "replay.history_nodes": nodes.length,
      "replay.raw_events_per_sec": rawRate,
      "replay.replay_events_per_sec": replayRate,
      "replay.ratio": ratio,
      "replay.model_calls": calls,
      "replay.raw_cpu_ms": Math.round(rawCpu.process),
      "replay.replay_cpu_ms": Math.round(replayCpu.process),
      "replay.raw_server_cpu_ms": Math.round(rawCpu.server),
      "replay.replay_server_cpu_ms": Math.round(replayCpu.server),
    };
  } finally {
    await server.stop();
  }
}
