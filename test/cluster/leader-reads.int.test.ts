import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  jetStreamReady,
  startLocalCluster,
  type LocalCluster,
} from "../../services/cluster/local.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { readInOrder } from "../../services/nats/ordered-read.ts";
import { uniqueNames } from "../support/thread-worker.ts";

// A whole-stream read (replay, search rebuild) right after a server of the cluster restarted.
// Its consumer reads one replica's copy, and the restarted server's is still being caught up:
// on it, consumers counted 0, 756, then 18,353 of 20,000 messages, for half a second after the
// stream already called that replica current. Reads keep their consumer on the leader only.
const MESSAGES = 10_000;
const READS = 10;

let dir: string;
let cluster: LocalCluster;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-leader-reads-"));
  cluster = await startLocalCluster({
    dir,
    names: { ...uniqueNames(), partitions: 1 },
    partitions: 1,
  });
  await jetStreamReady(cluster.url, 60_000, 3);
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("an ordered read after a server restart", () => {
  it("reads every message while the restarted replica catches up", async () => {
    const [first] = cluster.nodes;
    const nc = await connectNats({ url: first?.url ?? "", name: "leader-reads" });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({
        name: "LR",
        subjects: ["lr.>"],
        storage: StorageType.File,
        num_replicas: 3,
      });
      const leader = (await jsm.streams.info("LR")).cluster?.leader;
      // A follower, and not the server this client is connected to.
      const victim = cluster.nodes.find((n) => n !== first && n.name !== leader);
      if (!victim) throw new Error(`no follower to restart (leader ${leader})`);
      await victim.kill();
      const js = jetstream(nc);
      const data = new Uint8Array(200);
      for (let i = 0; i < MESSAGES; i += 500) {
        const batch = [];
        for (let j = i; j < Math.min(MESSAGES, i + 500); j++)
          batch.push(js.publish(`lr.${j % 50}`, data));
        await Promise.all(batch);
      }
      await victim.restart();
      // At once, several: each consumer is placed on a replica at random.
      const counts = await Promise.all(
        Array.from({ length: READS }, async () => {
          let total = -1;
          let read = 0;
          let last = 0;
          await readInOrder(
            nc,
            jsm,
            "LR",
            {},
            (n) => (total = n),
            (m) => {
              read += 1;
              if (m.seq !== last + 1) throw new Error(`sequence ${m.seq} after ${last}`);
              last = m.seq;
            },
          );
          return { total, read };
        }),
      );
      expect(counts).toEqual(
        Array.from({ length: READS }, () => ({ total: MESSAGES, read: MESSAGES })),
      );
    } finally {
      await nc.close();
    }
  }, 120_000);
});
