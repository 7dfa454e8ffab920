import type { NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import {
  chatMessage,
  expectedSnapshot,
  harness,
  publishMessage,
  readSnapshot,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
  waitSettledProgressing,
  type Harness,
} from "./support/thread-worker.ts";
import { WorkerProcess, workerEnv } from "./support/worker-process.ts";

const connections: NatsConnection[] = [];
const processes: WorkerProcess[] = [];

afterEach(async () => {
  for (const p of processes.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.kill("SIGKILL");
    await p.exited;
  }
  for (const nc of connections.splice(0)) await nc.close().catch(() => {});
});

async function setup(): Promise<Harness> {
  const names = uniqueNames();
  const nc = await connectNats({ url: inject("natsUrl"), name: "thread-worker-e2e" });
  connections.push(nc);
  await ensureTopology(nc, names);
  return harness(nc, names);
}

async function spawnWorker(h: Harness, extra: Record<string, string> = {}): Promise<WorkerProcess> {
  const p = new WorkerProcess(
    workerEnv(inject("natsUrl"), h.names, SMALL, { OUTLINE_ACK_WAIT_MS: "3000", ...extra }),
  );
  processes.push(p);
  await p.ready();
  return p;
}

/**
 * Publishes messages 0…perThread-1 of every thread, the threads concurrently, each in order;
 * `paceMs` between two messages of a thread, so a worker is caught in the middle of the stream.
 */
async function publishAll(h: Harness, threads: string[], perThread: number, paceMs = 0, from = 0) {
  await Promise.all(
    threads.map(async (t) => {
      for (let i = from; i < perThread; i++) {
        await publishMessage(h, chatMessage(t, i));
        if (paceMs > 0) await new Promise((r) => setTimeout(r, paceMs));
      }
    }),
  );
}

async function appliedCount(h: Harness, threads: string[]): Promise<number> {
  const snapshots = await Promise.all(threads.map((t) => readSnapshot(h, t)));
  return snapshots.reduce((sum, s) => sum + (s?.count ?? 0), 0);
}

async function expectMatchesCore(h: Harness, threads: string[]): Promise<void> {
  for (const thread of threads) {
    const actual = await readSnapshot(h, thread);
    expect(actual, `snapshot of ${thread}`).toEqual(await expectedSnapshot(h, thread, SMALL));
  }
}

describe("thread worker process", () => {
  it("SIGKILL in the middle of 2,000 messages, then a restart: the same snapshots as the pure core, no message applied twice", async () => {
    const h = await setup();
    const threads = ["k1", "k2", "k3", "k4"];
    const first = await spawnWorker(h);
    // The first half while the worker runs; the kill lands while it applies them (a busy machine
    // may let it finish that half first); the second half arrives while no worker runs.
    const publishing = publishAll(h, threads, 250, 8);
    await waitFor(
      "the worker to be mid-stream",
      async () => (await appliedCount(h, threads)) >= 500,
      60_000,
    );
    first.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    await publishing;
    await publishAll(h, threads, 500, 0, 250);
    expect(await appliedCount(h, threads)).toBeLessThanOrEqual(1_000);

    const second = await spawnWorker(h);
    await waitSettled(h, threads, 120_000);
    await expectMatchesCore(h, threads);
    for (const t of threads) expect((await readSnapshot(h, t))?.count).toBe(500);

    // SIGTERM drains: the process exits 0 and reports it stopped.
    second.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
    expect(second.output).toContain("stopped");
    expect(second.output).not.toMatch(/error:/);
  });

  it("20 threads × 2,000 messages published concurrently: every snapshot equals the pure core", async () => {
    const h = await setup();
    const threads = Array.from({ length: 20 }, (_, i) => `load-${i}`);
    const worker = await spawnWorker(h);
    const started = Date.now();
    await publishAll(h, threads, 2_000);
    // A hang fails within 90 s of the last snapshot write; slowness on a loaded machine does not.
    await waitSettledProgressing(h, threads);
    const seconds = (Date.now() - started) / 1000;
    await expectMatchesCore(h, threads);
    const metrics = await h.nc.request(`${h.names.apiPrefix}.metrics.worker`, "", {
      timeout: 5_000,
    });
    expect(metrics.string()).toContain('outline_worker_events_applied_total{kind="message"} 40000');
    console.log(`20 × 2,000 messages applied and settled in ${seconds.toFixed(1)} s`);
    worker.kill("SIGTERM");
    expect((await worker.exited).code).toBe(0);
  }, 1_800_000);
});
