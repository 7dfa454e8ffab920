import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { clusterBucket, openClusterBucket } from "../../services/cluster/bucket.ts";
import { joinCluster, type Membership } from "../../services/cluster/membership.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { faultScope, startOwnNats } from "../faults/support.ts";
import { uniqueNames, waitFor } from "../support/thread-worker.ts";

// When the cluster bucket cannot be written (its leader's server died: the cluster test's case
// (c)), no member can beat. The first to write again must not take the others' partitions for
// a silence the bucket caused. One member joins for real; the other is this test, beating by
// hand and holding both leases. The bucket refuses every write for longer than the failover
// time; once it takes them again, the test's member beats within the failover time.
const scope = faultScope();
const FAILOVER_MS = 1_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("membership through an outage of its bucket", () => {
  it("takes no partition from a member that beats again once the bucket is back", async () => {
    const nats = (scope.nats = await startOwnNats());
    const names = uniqueNames();
    const connections: NatsConnection[] = [];
    const connect = async (name: string) => {
      const nc = await connectNats({ url: nats.url, name });
      connections.push(nc);
      return nc;
    };
    const otherNc = await connect("other");
    const jsm = await jetstreamManager(otherNc);
    const other = await openClusterBucket(jetstream(otherNc), names, 1);
    const otherId = "other-1";
    let beating = true;
    const beat = async () => {
      if (!beating) return;
      const since = new Date(0).toISOString();
      const info = { id: otherId, host: "h", pid: 1, since, capacity: 1, partitions: [0, 1] };
      await other.put(`member.${otherId}`, JSON.stringify({ ...info, threads: 0, lag: 0 }));
    };
    await beat();
    for (const k of [0, 1])
      await other.create(`lease.${k}`, JSON.stringify({ member: otherId, since: "" }));
    const beats = setInterval(() => void beat().catch(() => undefined), FAILOVER_MS / 4);
    scope.stops.push(() => clearInterval(beats));

    const taken: number[][] = [];
    let member: Membership | undefined;
    try {
      member = await joinCluster({
        js: jetstream(await connect("member")),
        names,
        partitions: 2,
        replicas: 1,
        failoverMs: FAILOVER_MS,
        log: { info: () => {}, warn: () => {} },
        stats: () => ({ threads: 0, lag: 0 }),
        acquire: (ks) => {
          taken.push(ks);
          return Promise.resolve();
        },
        release: () => Promise.resolve(),
      });
      // Steady: the other member beats and holds its leases; nothing is taken.
      await sleep(2 * FAILOVER_MS);
      expect(taken).toEqual([]);
      beating = false;
      // Every write refused for twice the failover time (none fits max_msg_size): no heartbeat is
      // stored, reads still answer.
      const stream = `KV_${clusterBucket(names)}`;
      const info = await jsm.streams.info(stream);
      await jsm.streams.update(stream, { ...info.config, max_msg_size: 1 });
      await sleep(2 * FAILOVER_MS);
      await jsm.streams.update(stream, info.config);
      // The real member beats again within a quarter of the failover time; this one after half.
      await sleep(FAILOVER_MS / 2);
      beating = true;
      await sleep(2 * FAILOVER_MS);
      expect(taken, "partitions taken from a member that only the outage silenced").toEqual([]);
      // A silence with the bucket writable is a death: its partitions are taken.
      beating = false;
      await waitFor("the silent member's partitions to be taken", () => taken.length > 0, 5_000);
      expect(taken).toEqual([[0, 1]]);
    } finally {
      member?.abandon();
      for (const nc of connections) await nc.close().catch(() => {});
    }
  });
});
