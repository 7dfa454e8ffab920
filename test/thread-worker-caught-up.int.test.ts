import type { NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { quietLogger } from "../services/thread-worker/log.ts";
import { M } from "../services/thread-worker/metrics.ts";
import { startThreadWorker, type ThreadWorker } from "../services/thread-worker/worker.ts";
import {
  chatMessage,
  FakeSummarizer,
  harness,
  publishMessage,
  readSnapshot,
  SMALL,
  uniqueNames,
  waitFor,
} from "./support/thread-worker.ts";

const connections: NatsConnection[] = [];
const workers: ThreadWorker[] = [];

afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop().catch(() => {});
  for (const nc of connections.splice(0)) await nc.close().catch(() => {});
});

// Under a backlog a thread's events wait up to saveLingerMs for more to share one save. Once
// the consumer has nothing left to deliver and no delivery came for a moment, nothing more is
// coming to share it: the waiting events are saved and acknowledged at once.
describe("thread worker: caught up", () => {
  it("events lingering for a shared save are saved and acknowledged once the backlog is delivered, not after the linger", async () => {
    const names = uniqueNames();
    const nc = await connectNats({ url: inject("natsUrl"), name: "caught-up-test" });
    connections.push(nc);
    await ensureTopology(nc, names);
    const h = await harness(nc, names);
    const threads = ["c1", "c2", "c3"];
    // Published before the worker starts: it begins behind, so its saves linger.
    for (let i = 0; i < 40; i++)
      await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
    const lingerMs = 3_000;
    const started = Date.now();
    const worker = await startThreadWorker({
      nc,
      names,
      settings: SMALL,
      summarizer: new FakeSummarizer(),
      log: quietLogger,
      snapshotDelayMs: 20,
      saveLingerMs: lingerMs,
      ackWaitMs: 30_000,
    });
    workers.push(worker);
    await waitFor(
      "every event applied, saved and acknowledged",
      async () => {
        const info = await h.jsm.consumers.info(h.names.chatStream, h.names.workerDurable);
        const shown = await Promise.all(threads.map((t) => readSnapshot(h, t)));
        return (
          info.num_ack_pending === 0 &&
          info.num_pending === 0 &&
          shown.every((s) => s?.count === 40)
        );
      },
      10_000,
    );
    // Well before the linger would have run out for the events of the first burst.
    expect(Date.now() - started).toBeLessThan(lingerMs - 500);
    expect(worker.metrics.get(M.events, { kind: "message" })).toBe(120);
    // Still coalesced: far fewer saves than events.
    expect(worker.metrics.get(M.stateSaves)).toBeLessThan(60);
  });
});
