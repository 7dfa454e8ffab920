import { describe, expect, it } from "vitest";
import { METRIC } from "../services/thread-worker/metrics.ts";
import { chatMessage, publishMessage, readSnapshot, waitFor } from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();

// Under a backlog a thread's events wait up to saveLingerMs for more to share one save. Once
// the consumer has nothing left to deliver and no delivery came for a moment, nothing more is
// coming to share it: the waiting events are saved and acknowledged at once. The lingers here
// are a minute, far past each wait's deadline: every save the tests see is one the worker made
// because it caught up or was crowded, whatever the load on the host.
describe("thread worker: caught up", () => {
  it("events lingering for a shared save are saved and acknowledged once the backlog is delivered, not after the linger", async () => {
    const { h } = await scope.setup("caught-up-test");
    const threads = ["c1", "c2", "c3"];
    // Published before the worker starts: it begins behind, so its saves linger.
    for (let i = 0; i < 40; i++)
      await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
    const lingerMs = 60_000;
    const worker = await scope.start(h, { saveLingerMs: lingerMs, ackWaitMs: 10 * lingerMs });
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
      // Before the linger would have run out for the events of the first burst.
      lingerMs / 2,
    );
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(120);
    // Still coalesced: far fewer saves than events.
    expect(worker.metrics.get(METRIC.stateSaves)).toBeLessThan(60);
  });

  it("crowded (near the consumer's max_ack_pending), events linger less: a backlog does not stall a whole linger per window of deliveries", async () => {
    const { h } = await scope.setup("crowded-test");
    const thread = "w1";
    for (let i = 0; i < 180; i++) await publishMessage(h, chatMessage(thread, i));
    const lingerMs = 60_000;
    // At most 60 unacknowledged: the consumer delivers the next window only once a save has
    // acknowledged the last, so three windows; the last is caught up and saved at once.
    const worker = await scope.start(h, {
      saveLingerMs: lingerMs,
      ackWaitMs: 10 * lingerMs,
      maxAckPending: 60,
    });
    await waitFor(
      "every event applied, saved and acknowledged",
      async () => {
        const info = await h.jsm.consumers.info(h.names.chatStream, h.names.workerDurable);
        return (
          info.num_ack_pending === 0 &&
          info.num_pending === 0 &&
          (await readSnapshot(h, thread))?.count === 180
        );
      },
      // Two windows waiting a whole linger each would take two minutes; at the consumer's limit
      // they wait none of it.
      lingerMs / 2,
    );
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(180);
    expect(worker.metrics.get(METRIC.stateSaves)).toBeLessThan(20);
  });
});
