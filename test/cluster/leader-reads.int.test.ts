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
import { subjects } from "../../services/nats/subjects.ts";
import { ApiError } from "../../services/api/api-error.ts";
import { createReader } from "../../services/nats/reader.ts";
import { chatMessage, uniqueNames } from "../support/thread-worker.ts";

// Whole reads (replay, search rebuild) and a prompt's read of many newer messages, right after
// a server of the cluster restarted. Each reads through a consumer, which reads one replica's
// copy, and the restarted server's is still being caught up: on it, consumers counted 0, 756,
// then 18,353 of 20,000 messages, for half a second after the stream already called that replica
// current. Consumers are kept on the leader only (leader-consumer.ts).
const MESSAGES = 10_000;
const READS = 10;
const THREAD = "lr";
const names = { ...uniqueNames(), partitions: 1 };

let dir: string;
let cluster: LocalCluster;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-leader-reads-"));
  cluster = await startLocalCluster({ dir, names, partitions: 1 });
  await jetStreamReady(cluster.url, 60_000, 3);
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("reads through a consumer after a server restart", () => {
  it("read every message while the restarted replica catches up", async () => {
    const [first] = cluster.nodes;
    const nc = await connectNats({ url: first?.url ?? "", name: "leader-reads" });
    try {
      const jsm = await jetstreamManager(nc);
      const stream = names.chatStream;
      await jsm.streams.add({
        name: stream,
        subjects: [`${names.chatPrefix}.>`],
        storage: StorageType.File,
        num_replicas: 3,
        allow_direct: true,
      });
      const leader = (await jsm.streams.info(stream)).cluster?.leader;
      // A follower, and not the server this client is connected to.
      const victim = cluster.nodes.find((n) => n !== first && n.name !== leader);
      if (!victim) throw new Error(`no follower to restart (leader ${leader})`);
      await victim.kill();
      const js = jetstream(nc);
      const subject = subjects(names).messageCreated(THREAD);
      for (let i = 0; i < MESSAGES; i += 500) {
        const batch = [];
        for (let j = i; j < Math.min(MESSAGES, i + 500); j++)
          batch.push(js.publish(subject, JSON.stringify(chatMessage(THREAD, j))));
        await Promise.all(batch);
      }
      await victim.restart();
      // At once, several of each: each consumer is placed on a replica at random.
      const whole = Array.from({ length: READS }, async () => {
        let total = -1;
        let read = 0;
        let last = 0;
        await readInOrder(
          nc,
          jsm,
          stream,
          {},
          (n) => (total = n),
          (m) => {
            read += 1;
            if (m.seq !== last + 1) throw new Error(`sequence ${m.seq} after ${last}`);
            last = m.seq;
          },
        );
        return { total, read };
      });
      // directReads 0: the newer messages come through the consumer alone. A request may answer
      // 503 while the server rejoins (a client asks again); it must never answer short.
      const until = Date.now() + 60_000;
      const newer = Array.from({ length: READS }, async () => {
        const reader = createReader(nc, names, { directReads: 0, fetchExpiresMs: 1_000 });
        for (;;) {
          try {
            const got = await reader.messagesAfter(THREAD, 0, MESSAGES, MESSAGES);
            return got.map((m) => m.seq).filter((seq, i) => seq === i + 1).length;
          } catch (err) {
            if (!(err instanceof ApiError && err.status === 503) || Date.now() > until) throw err;
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        }
      });
      const [wholeReads, newerReads] = await Promise.all([Promise.all(whole), Promise.all(newer)]);
      expect(wholeReads).toEqual(
        Array.from({ length: READS }, () => ({ total: MESSAGES, read: MESSAGES })),
      );
      expect(newerReads).toEqual(Array.from({ length: READS }, () => MESSAGES));
    } finally {
      await nc.close();
    }
  }, 120_000);
});
