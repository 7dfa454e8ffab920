import { describe, it } from "vitest";
import { partitionDurable } from "../../services/thread-worker/partitions.ts";
import { expectMatchesCleanRun, faultScope, ownHarness } from "../faults/support.ts";
import {
  chatMessage,
  publishMessage,
  SMALL,
  uniqueNames,
  waitSettled,
} from "../support/thread-worker.ts";
import { workerScope } from "../support/worker-scope.ts";
import { mappedNats } from "./instance.ts";

// A held partition whose consumer stops delivering is re-created. On a cluster one stalled
// for minutes after a server restart ("consumer … has NO quorum, stalled", nats-server 2.9.10,
// the cluster test's case (c)); here the consumer is deleted under the worker, so nothing is
// delivered any more, and the partition's next events must still be applied.
const scope = faultScope();
const workers = workerScope();
const PARTITIONS = 2;

describe("a held partition's consumer", () => {
  it("is re-created when it stops delivering", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    await workers.start(h);
    try {
      const thread = "pc-1";
      for (let i = 0; i < 3; i++) await publishMessage(h, chatMessage(thread, i));
      await waitSettled(h, [thread]);
      const k = h.s.partitionOf(thread) ?? 0;
      await h.jsm.consumers.delete(names.chatStream, partitionDurable(names, k));
      for (let i = 3; i < 8; i++) await publishMessage(h, chatMessage(thread, i));
      await waitSettled(h, [thread], 20_000);
      await expectMatchesCleanRun(h, [thread], SMALL);
    } finally {
      await workers.stopWorkers();
    }
  });
});
