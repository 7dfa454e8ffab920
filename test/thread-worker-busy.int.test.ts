import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { workerBucketNames } from "../services/thread-worker/buckets.ts";
import { quietLogger } from "../services/thread-worker/log.ts";
import { startThreadWorker, type ThreadWorker } from "../services/thread-worker/worker.ts";
import {
  chatMessage,
  FakeSummarizer,
  harness,
  publishMessage,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
} from "./support/thread-worker.ts";

const connections: NatsConnection[] = [];
const workers: ThreadWorker[] = [];

afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop().catch(() => {});
  for (const nc of connections.splice(0)) await nc.close().catch(() => {});
});

// The busy index (busy-index.ts) lists threads whose stored state has work outstanding. A thread
// with no stored state cannot be listed, so loading a new thread asks nothing of the index; a
// listed thread without a stored state (its state deleted by hand) is woken and unlisted.
describe("thread worker: busy index", () => {
  it("a new thread costs no unlisting request; a listed thread with no stored state is unlisted when woken", async () => {
    const names = uniqueNames();
    const nc = await connectNats({ url: inject("natsUrl"), name: "busy-test" });
    connections.push(nc);
    await ensureTopology(nc, names);
    const h = await harness(nc, names);
    const busyBucket = workerBucketNames(names).busy;
    // Every purge request on the busy bucket's stream (how a thread is unlisted), as it is sent.
    const purges: string[] = [];
    const spy = nc.subscribe(`$JS.API.STREAM.PURGE.KV_${busyBucket}`, {
      callback: (_err, msg) => {
        purges.push(msg.string());
      },
    });

    const worker = await startThreadWorker({
      nc,
      names,
      settings: SMALL,
      summarizer: new FakeSummarizer(),
      log: quietLogger,
      snapshotDelayMs: 20,
    });
    workers.push(worker);
    // Two short threads that never have work outstanding: loaded, applied, saved, never listed.
    const threads = ["fresh1", "fresh2"];
    for (let i = 0; i < 3; i++)
      await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
    await waitSettled(h, threads);
    await nc.flush();
    expect(purges).toEqual([]);
    await worker.stop();
    workers.splice(0);

    // A stale listing: the thread has no stored state. The next worker wakes it and unlists it.
    const kv = await new Kvm(h.js).open(busyBucket);
    await kv.put("stale", "");
    workers.push(
      await startThreadWorker({
        nc,
        names,
        settings: SMALL,
        summarizer: new FakeSummarizer(),
        log: quietLogger,
      }),
    );
    await waitFor("the stale listing to be removed", async () => (await kv.get("stale")) === null);
    expect(purges).toHaveLength(1);
    spy.unsubscribe();
  });
});
