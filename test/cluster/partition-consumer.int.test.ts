import { AckPolicy, type JsMsg } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  partitionDurable,
  partitionDurables,
  PartitionConsumers,
} from "../../services/thread-worker/partitions.ts";
import { expectMatchesCleanRun, faultScope, ownHarness } from "../faults/support.ts";
import {
  chatMessage,
  publishMessage,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
} from "../support/thread-worker.ts";
import { workerScope } from "../support/worker-scope.ts";
import { mappedNats } from "./instance.ts";

// A partition's consumer as its reader changes (a move: two names, one Raft write to open), and
// a held partition whose consumer stops delivering, re-created. On a cluster one stalled
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

describe("a partition's next reader", () => {
  it("creates the other name at the higher ack floor and deletes the one left", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    const thread = "pc-2";
    const k = h.s.partitionOf(thread) ?? 0;
    const seqs: number[] = [];
    for (let i = 0; i < 5; i++) seqs.push((await publishMessage(h, chatMessage(thread, i))).seq);
    const got: JsMsg[] = [];
    // An ack wait far longer than the test: an event that comes again came from the floor.
    const reader = () =>
      new PartitionConsumers(h.js, h.jsm, names, h.s, {
        ackWaitMs: 600_000,
        maxAckPending: 100,
        route: (msg) => got.push(msg),
        failed: () => undefined,
        forget: () => undefined,
      });
    const consumerNames = async () => {
      const out: string[] = [];
      for await (const c of h.jsm.consumers.list(names.chatStream)) out.push(c.name);
      return out.sort();
    };
    const [a, b] = partitionDurables(names, k);

    // The first reader acknowledges the first three events and stops without the other two.
    const first = reader();
    await first.open(k);
    await waitFor("five deliveries", () => got.length === 5);
    for (const msg of got.slice(0, 3)) await msg.ackAck();
    await first.close(k);
    expect(await consumerNames()).toEqual([a]);

    // The next one reads ahead, then creates the other name: the two events come again at once.
    got.length = 0;
    const second = reader();
    second.prepare(k);
    await second.open(k);
    await waitFor("the two unacknowledged events", () => got.length === 2);
    expect(got.map((m) => m.seq)).toEqual(seqs.slice(3));
    await second.close(k);
    expect(await consumerNames()).toEqual([b]);

    // Both names there (a reader died before its delete): the one behind goes, the start is the
    // higher floor.
    for (const msg of got) await msg.ackAck();
    await h.jsm.consumers.add(names.chatStream, {
      durable_name: a,
      filter_subject: h.s.partitionFilter(k),
      ack_policy: AckPolicy.Explicit,
    });
    got.length = 0;
    const third = reader();
    await third.open(k);
    await publishMessage(h, chatMessage(thread, 5));
    await waitFor("the event published after", () => got.length > 0);
    expect(got.map((m) => m.seq)).toEqual([(seqs[4] as number) + 1]);
    await third.close(k);
    expect(await consumerNames()).toEqual([a]);
  });
});
