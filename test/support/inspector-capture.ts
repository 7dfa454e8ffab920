/**
 * The capture in docs/inspector.md: `npx tsx test/support/inspector-capture.ts`. A worker on a
 * private nats-server sends its actors' inspection events to `outline inspect`'s server, while
 * one thread is loaded, cut while a slow summarizer builds the node it waits for, held in a
 * backlog, passivated, loaded again and erased. Prints the lines `outline inspect` prints.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatLine } from "../../services/cli/inspect/transitions.ts";
import { startInspectServer } from "../../services/cli/inspect/server.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { createWorkerInspector } from "../../services/thread-worker/inspect.ts";
import { quietLogger } from "../../services/thread-worker/log.ts";
import { startThreadWorker } from "../../services/thread-worker/worker.ts";
import type { MeteredSummarizer } from "../../services/summarizer/index.ts";
import { noUsage } from "../../services/summarizer/usage.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import { fakeSummary, makeMessage } from "./conversation.ts";
import { harness, publishMessage, uniqueNames } from "./thread-worker.ts";

const NATS_PORT = Number(process.env.CAPTURE_NATS_PORT ?? 15422);
const INSPECT_PORT = Number(process.env.CAPTURE_INSPECT_PORT ?? 15787);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A summarizer that takes 600 ms a node: long enough to watch a cut wait for one. */
const slow: MeteredSummarizer = {
  name: "slow",
  async summarize(job: SummaryJob) {
    await sleep(600);
    return { text: fakeSummary(job), usage: { inputTokens: 0, cachedTokens: 0, outputTokens: 0 } };
  },
  usage: noUsage,
};

const dir = mkdtempSync(join(tmpdir(), "inspector-capture-"));
const server = spawn("nats-server", [
  "-js",
  "-a",
  "127.0.0.1",
  "-p",
  String(NATS_PORT),
  "-sd",
  dir,
]);
const lines: string[] = [];
try {
  await sleep(500);
  const nc = await connectNats({ url: `nats://127.0.0.1:${NATS_PORT}`, name: "capture" });
  const names = uniqueNames();
  await ensureTopology(nc, names);
  const h = await harness(nc, names);
  const inspectServer = await startInspectServer({
    port: INSPECT_PORT,
    thread: "support-42",
    onLine: (line) => lines.push(formatLine(line)),
  });
  const inspector = createWorkerInspector(`ws://127.0.0.1:${INSPECT_PORT}`);
  const worker = await startThreadWorker({
    nc,
    names,
    settings: { line: 128, tail: [60, 120], outline: [2000, 4000], concurrency: 1 },
    summarizer: slow,
    log: quietLogger,
    inspect: inspector.inspect,
    idleMs: 1_500,
    backlogLimit: 6,
    snapshotDelayMs: 20,
  });
  const thread = "support-42";
  const text = (i: number) => `message ${i}: ` + "the deploy of the billing service ".repeat(4);
  for (let i = 0; i < 9; i++) await publishMessage(h, makeMessage(thread, i, text(i)));
  // Summaries come back one by one; then the thread idles and is passivated.
  await sleep(14_000);
  await publishMessage(h, makeMessage(thread, 9, "back again"));
  await sleep(800);
  await h.js.publish(
    h.s.threadDeleted(thread),
    JSON.stringify({ thread, at: "2026-01-01T01:00:00.000Z" }),
  );
  // Deleted and idle: passivated too.
  await sleep(3_000);
  await worker.stop();
  inspector.stop();
  await sleep(300);
  await inspectServer.close();
  await nc.close();
} finally {
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}
for (const line of lines) console.log(line);
