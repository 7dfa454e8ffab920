// The replay bench's measured part, run in a Node of its own as `outline replay` is: not sharing
// a heap with the bench's fixtures (tens of MB) or JIT state with the benches run before it. Each
// round reads both streams raw, then replays them; one `ROUND {json}` line per round on stdout. Environment: NATS_URL, BENCH_SERVER_PID (for
// nats-server's CPU), BENCH_REPLAY_ROUNDS, and BENCH_PROFILE as for every bench.
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { performance } from "node:perf_hooks";
import { run as replayCommand } from "../../services/cli/replay/run.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { readInOrder } from "../../services/nats/ordered-read.ts";
import { DEFAULT_NAMES } from "../../services/config/names.ts";
import { BENCH_CONFIG_FILE } from "./bench-config.ts";
import { cpuSecondsOf } from "./child.ts";
import { InstantSummarizer } from "./instant.ts";
import { profiled } from "./profile.ts";
import { ROUND_LINE, type RoundMeasure, type SideMeasure } from "./replay-round.ts";

/**
 * Reads a whole stream through the project's own ordered read (what the replay reads with) and
 * does nothing with it: the baseline, so the ratio is the cost of the replay's work alone.
 */
async function readOwn(nc: NatsConnection, jsm: JetStreamManager, stream: string): Promise<number> {
  let n = 0;
  await readInOrder(
    nc,
    jsm,
    stream,
    {},
    () => {},
    () => {
      n += 1;
    },
  );
  return n;
}

/** Reads a whole stream through nats.js's ordered consumer and does nothing with it. */
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

async function measured<T>(
  serverPid: number | undefined,
  fn: () => Promise<T>,
): Promise<{ value: T; side: SideMeasure }> {
  const cpu = process.cpuUsage();
  const server = cpuSecondsOf(serverPid);
  const start = performance.now();
  const value = await fn();
  const ms = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const serverNow = cpuSecondsOf(serverPid);
  return {
    value,
    side: {
      ms,
      cpuMs: (used.user + used.system) / 1_000,
      serverCpuMs:
        server === undefined || serverNow === undefined ? NaN : (serverNow - server) * 1_000,
    },
  };
}

async function main(): Promise<void> {
  const url = process.env.NATS_URL ?? "";
  const serverPid = Number(process.env.BENCH_SERVER_PID) || undefined;
  const rounds = Number(process.env.BENCH_REPLAY_ROUNDS ?? 5);
  const nc = await connectNats({ url, name: "bench-replay-raw" });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const summarizer = new InstantSummarizer();
  try {
    for (let round = 0; round < rounds; round++) {
      // The limit: the replay's own ordered read of each stream with a no-op callback, both read
      // at once (the replay reads CHAT while HISTORY is still coming in, so the baseline
      // overlaps its reads the same way).
      const raw = await measured(serverPid, async () => {
        const counts = await Promise.all([
          readOwn(nc, jsm, DEFAULT_NAMES.historyStream),
          readOwn(nc, jsm, DEFAULT_NAMES.chatStream),
        ]);
        return counts[0] + counts[1];
      });
      // The same through nats.js's ordered consumer: what a user would write to merely read.
      const natsjs = await measured(serverPid, async () => {
        const counts = await Promise.all([
          readAll(js, DEFAULT_NAMES.historyStream),
          readAll(js, DEFAULT_NAMES.chatStream),
        ]);
        return counts[0] + counts[1];
      });
      // Ours: the replay command, as `outline replay --all` runs it (it compares what it
      // rebuilt with the live snapshots, here none, and writes nothing), then with `--into`, as a
      // rebuild runs it: every snapshot written to a bucket of its own.
      const replayAs = async (args: string[]) => {
        let out = "";
        const side = await measured(serverPid, () =>
          profiled(() =>
            replayCommand(args, {
              env: { NATS_URL: url, OUTLINE_CONFIG: BENCH_CONFIG_FILE },
              stdout: { write: (text: string) => void (out += text) },
              stderr: { write: () => {} },
              summarizer,
            }),
          ),
        );
        if (side.value !== 0) {
          throw new Error(
            `outline replay ${args.join(" ")} exited ${side.value}; its output:\n${out}`,
          );
        }
        return { ...side, out };
      };
      const replay = await replayAs(["--all"]);
      const out = replay.out;
      const into = await replayAs(["--all", "--into", "outline-bench-rebuilt"]);
      // The command's own count of model calls, and ours of the summarizer it was handed.
      const reported = Number(/model calls: (\d+)/.exec(out)?.[1] ?? NaN);
      const measure: RoundMeasure = {
        raw: { ...raw.side, read: raw.value },
        natsjs: { ...natsjs.side, read: natsjs.value },
        into: into.side,
        replay: {
          ...replay.side,
          calls: (Number.isNaN(reported) ? 1 : reported) + summarizer.calls,
        },
      };
      summarizer.calls = 0;
      console.log(`${ROUND_LINE}${JSON.stringify(measure)}`);
    }
  } finally {
    await nc.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exit(1);
  },
);
