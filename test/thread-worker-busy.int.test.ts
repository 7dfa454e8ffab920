import { Kvm } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { workerBucketNames } from "../services/nats/buckets.ts";
import { chatMessage, publishMessage, waitFor, waitSettled } from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();

// The busy index (busy-index.ts) lists threads whose stored state has work outstanding. A thread
// with no stored state cannot be listed, so loading a new thread asks nothing of the index; a
// listed thread without a stored state (its state deleted by hand) is woken and unlisted.
describe("thread worker: busy index", () => {
  it("a new thread costs no unlisting request; a listed thread with no stored state is unlisted when woken", async () => {
    const { nc, h } = await scope.setup("busy-test");
    const busyBucket = workerBucketNames(h.names).busy;
    // Every purge request on the busy bucket's stream (how a thread is unlisted), as it is sent.
    const purges: string[] = [];
    const spy = nc.subscribe(`$JS.API.STREAM.PURGE.KV_${busyBucket}`, {
      callback: (_err, msg) => {
        purges.push(msg.string());
      },
    });

    await scope.start(h);
    // Two short threads that never have work outstanding: loaded, applied, saved, never listed.
    const threads = ["fresh1", "fresh2"];
    for (let i = 0; i < 3; i++)
      await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
    await waitSettled(h, threads);
    await nc.flush();
    expect(purges).toEqual([]);
    await scope.stopWorkers();

    // A stale listing: the thread has no stored state. The next worker wakes it and unlists it.
    const kv = await new Kvm(h.js).open(busyBucket);
    await kv.put("stale", "");
    await scope.start(h);
    await waitFor("the stale listing to be removed", async () => (await kv.get("stale")) === null);
    expect(purges).toHaveLength(1);
    spy.unsubscribe();
  });
});
