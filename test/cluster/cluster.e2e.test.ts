import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KvWatchEntry } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { partitionOf } from "../../shared/ownership.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { startLocalCluster, type LocalCluster } from "../../services/cluster/local.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { ensureWorkerBuckets, workerBucketNames } from "../../services/thread-worker/buckets.ts";
import { openClusterBucket } from "../../services/cluster/membership.ts";
import { expectMatchesCleanRun } from "../faults/support.ts";
import {
  chatMessage,
  harness,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "../support/thread-worker.ts";
import { Instance } from "./instance.ts";
import { freePort } from "../../services/start/processes.ts";

// SPEC §9 on a local 3-node cluster with R3 streams, instances as `npm start` processes. Heavy:
// the e2e project runs it once. (a) a SIGKILLed instance, (b) a 4th joining, (c) the CHAT
// stream's leader server killed, (d) a rolling restart: every thread ends equal to the pure
// core on its log, and no state write ever goes back.
const PARTITIONS = 8;
const names: Record<"a" | "b" | "c" | "d", InfraNames> = {
  a: { ...uniqueNames(), partitions: PARTITIONS },
  b: { ...uniqueNames(), partitions: PARTITIONS },
  c: { ...uniqueNames(), partitions: PARTITIONS },
  d: { ...uniqueNames(), partitions: PARTITIONS },
};
let dir: string;
let cluster: LocalCluster;
let h: Harness | undefined;
const instances: Instance[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-cluster-"));
  cluster = await startLocalCluster({ dir, names: Object.values(names), partitions: PARTITIONS });
}, 60_000);
afterEach(async () => {
  for (const i of instances.splice(0)) {
    if (i.child.exitCode === null && i.child.signalCode === null) i.killTree();
    await i.exited;
  }
  await h?.nc.close();
  h = undefined;
});
afterAll(async () => {
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function setUp(n: InfraNames): Promise<Harness> {
  const nc = await connectNats({ url: cluster.url, name: "cluster-test" });
  await ensureTopology(nc, n, { replicas: 3 });
  // What the first instance would create, made here: R3 creations by instances starting at the
  // same moment on a loaded 2-core machine can outlast a request's timeout.
  const slow = jetstream(nc, { timeout: 30_000 });
  await ensureWorkerBuckets(slow, await jetstreamManager(nc), n, 3);
  await openClusterBucket(slow, n, 3);
  h = await harness(nc, n);
  return h;
}

/** Starts instances one after another (each ready before the next). */
async function startReady(n: InfraNames, count: number): Promise<Instance[]> {
  const started: Instance[] = [];
  for (let i = 0; i < count; i++) {
    const instance = await start(n);
    await instance.ready();
    started.push(instance);
  }
  return started;
}

// A free port each: a fixed range collided with a leftover listener in a full-suite run.
async function start(n: InfraNames, extra: Record<string, string> = {}): Promise<Instance> {
  const i = new Instance(cluster.url, n, SMALL, await freePort("127.0.0.1"), extra);
  instances.push(i);
  return i;
}

/** Publishes as a platform does through a failover: retried with the same msgID until stored. */
async function publish(hh: Harness, thread: string, i: number): Promise<void> {
  const m = chatMessage(thread, i);
  for (let attempt = 0; ; attempt++) {
    try {
      const ack = await hh.js.publish(hh.s.messageCreated(thread), JSON.stringify(m), {
        msgID: m.id,
        timeout: 2_000,
      });
      const log = hh.log.get(thread) ?? [];
      if (!log.some((e) => e.message.id === m.id)) log.push({ message: m, seq: ack.seq });
      hh.log.set(thread, log);
      return;
    } catch (err) {
      if (attempt > 100) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function publishAll(hh: Harness, threads: string[], from: number, to: number) {
  await Promise.all(
    threads.map(async (t) => {
      for (let i = from; i < to; i++) await publish(hh, t, i);
    }),
  );
}

interface Write {
  thread: string;
  revision: number;
  seq: number;
  boundary: number;
  at: number;
}

/** Every write to a bucket from now on, with when it was seen. */
async function recordWrites(
  hh: Harness,
  bucket: string,
  position: (value: unknown) => { seq: number; boundary: number },
): Promise<{ writes: Write[]; stop: () => void }> {
  const kv = await new Kvm(jetstream(hh.nc)).open(bucket);
  const writes: Write[] = [];
  const watch = await kv.watch({ include: "updates" as never });
  void (async () => {
    for await (const e of watch as AsyncIterable<KvWatchEntry>) {
      if (e.operation !== "PUT") continue;
      writes.push({
        thread: e.key,
        revision: e.revision,
        at: Date.now(),
        ...position(e.json<unknown>()),
      });
    }
  })();
  return { writes, stop: () => watch.stop() };
}

function backwardWrites(writes: Write[]): string[] {
  const last = new Map<string, Write>();
  const problems: string[] = [];
  for (const w of [...writes].sort((a, b) => a.revision - b.revision)) {
    const before = last.get(w.thread);
    if (before && (w.seq < before.seq || (w.seq === before.seq && w.boundary < before.boundary)))
      problems.push(`${w.thread}: revision ${w.revision} went back from ${before.revision}`);
    last.set(w.thread, w);
  }
  return problems;
}

async function watchBoth(hh: Harness) {
  const snapshots = await recordWrites(hh, hh.names.kvBucket, (v) => {
    const s = v as OutlineSnapshot;
    return { seq: s.seq, boundary: s.boundary };
  });
  const actors = await recordWrites(hh, workerBucketNames(hh.names).actors, (v) => {
    const r = v as { seen: number; snapshot: { context: { core: { boundary: number } } } };
    return { seq: r.seen, boundary: r.snapshot.context.core.boundary };
  });
  return { snapshots, actors };
}

async function settle(hh: Harness, threads: string[], who: Instance[]) {
  try {
    await waitSettled(hh, threads, 180_000);
  } catch (err) {
    throw new Error(
      `${(err as Error).message}\n${who.map((i) => `--- instance ${i.port}:\n${i.output.slice(-2_500)}`).join("\n")}`,
    );
  }
}

const threadsOf = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("many instances on a 3-node cluster (SPEC §9)", () => {
  it("(a) 3 instances, 200 threads, one SIGKILLed mid-stream: every thread equals a clean run", async () => {
    const hh = await setUp(names.a);
    const [i1, i2, i3] = (await startReady(names.a, 3)) as [Instance, Instance, Instance];
    await waitFor(
      "3 members holding every partition",
      async () => {
        const v = await i1.cluster();
        return v.members.length === 3 && Object.keys(v.leases).length === PARTITIONS;
      },
      60_000,
    );
    const threads = threadsOf("a", 200);
    const { snapshots, actors } = await watchBoth(hh);
    await publishAll(hh, threads, 0, 15);
    const during = await i1.cluster();
    console.log(`/cluster during (a):\n${JSON.stringify(during, null, 1)}`);
    const victim = during.members.find((m) => m.pid !== undefined && i3.memberId() === m.id);
    expect(victim, "the third instance's member").toBeDefined();
    const owned = new Set(victim?.partitions);
    const orphans = new Set(threads.filter((t) => owned.has(partitionOf(t, PARTITIONS))));
    const killedAt = Date.now();
    i3.killTree();
    await i3.exited;
    await publishAll(hh, threads, 15, 30);
    await settle(hh, threads, [i1, i2]);
    // The first write by a new owner: one reflecting a message published after the kill.
    const firstAfter = new Map(threads.map((t) => [t, hh.log.get(t)?.[15]?.seq ?? Infinity]));
    const first = snapshots.writes.find(
      (w) => orphans.has(w.thread) && w.seq >= (firstAfter.get(w.thread) ?? Infinity),
    );
    console.log(
      `(a) kill to first write of a thread the dead instance owned: ${first ? first.at - killedAt : "none"} ms (OUTLINE_FAILOVER_MS 5000; ${orphans.size} of its threads)`,
    );
    snapshots.stop();
    actors.stop();
    await expectMatchesCleanRun(hh, threads, SMALL);
    expect(backwardWrites(actors.writes)).toEqual([]);
    expect(backwardWrites(snapshots.writes)).toEqual([]);
    const after = await i1.cluster();
    expect(after.members.filter((m) => m.partitions.length > 0)).toHaveLength(2);
    expect(Object.values(after.leases).every((m) => m !== victim?.id)).toBe(true);
  });

  it("(b) a 4th instance joins mid-stream and takes partitions; no thread's state goes back", async () => {
    const hh = await setUp(names.b);
    const three = await startReady(names.b, 3);
    const threads = threadsOf("b", 80);
    const { snapshots, actors } = await watchBoth(hh);
    await publishAll(hh, threads, 0, 20);
    const fourth = await start(names.b);
    await Promise.all([fourth.ready(), publishAll(hh, threads, 20, 40)]);
    await settle(hh, threads, [...three, fourth]);
    snapshots.stop();
    actors.stop();
    await expectMatchesCleanRun(hh, threads, SMALL);
    expect(backwardWrites(actors.writes)).toEqual([]);
    expect(backwardWrites(snapshots.writes)).toEqual([]);
    const v = await fourth.cluster();
    const mine = v.members.find((m) => m.id === fourth.memberId());
    expect(mine?.partitions.length).toBe(PARTITIONS / 4);
    for (const i of [...three, fourth]) expect(i.output).not.toContain("(from a member that died)");
  });

  it("(c) the server leading CHAT is killed mid-stream: nothing is lost", async () => {
    const hh = await setUp(names.c);
    const two = await startReady(names.c, 2);
    const threads = threadsOf("c", 60);
    await publishAll(hh, threads, 0, 15);
    const jsm = await jetstreamManager(hh.nc);
    const leader = (await jsm.streams.info(names.c.chatStream)).cluster?.leader;
    const node = cluster.nodes.find((n) => n.name === leader);
    expect(node, `leader ${leader}`).toBeDefined();
    await node?.kill();
    await publishAll(hh, threads, 15, 30);
    await node?.restart();
    await settle(hh, threads, two);
    await expectMatchesCleanRun(hh, threads, SMALL);
    const newLeader = (await jsm.streams.info(names.c.chatStream)).cluster?.leader;
    console.log(`(c) CHAT leader ${leader} killed; now led by ${newLeader}`);
  });

  it("(d) rolling restart: each instance SIGTERMed in turn hands over at once, nothing lost", async () => {
    const hh = await setUp(names.d);
    let live = await startReady(names.d, 3);
    const threads = threadsOf("d", 60);
    const { snapshots, actors } = await watchBoth(hh);
    let next = 0;
    const step = 8;
    for (let round = 0; round < 3; round++) {
      await publishAll(hh, threads, next, next + step);
      next += step;
      const old = live[0] as Instance;
      old.sigterm();
      const [exit] = await Promise.all([old.exited, publishAll(hh, threads, next, next + 4)]);
      next += 4;
      expect(exit.code, old.output.slice(-2_000)).toBe(0);
      expect(old.output).toContain("cluster: handed over partitions");
      const fresh = await start(names.d);
      live = [...live.slice(1), fresh];
      await fresh.ready();
    }
    await publishAll(hh, threads, next, next + step);
    await settle(hh, threads, live);
    snapshots.stop();
    actors.stop();
    await expectMatchesCleanRun(hh, threads, SMALL);
    expect(backwardWrites(actors.writes)).toEqual([]);
    expect(backwardWrites(snapshots.writes)).toEqual([]);
    // Every partition moved by hand-over: nobody took one from a member judged dead.
    for (const i of [...instances]) expect(i.output).not.toContain("(from a member that died)");
  });
});
