// Joining under load (issue 48): three instances (`npm start`, each a worker and a
// prompt-builder) started at once on a local 3-node cluster (R3, 32 partitions, as `npm run
// cluster` runs it) while the heavy load is published. Per instance: from its first healthy
// answer to /healthz until its worker reads its share of the partitions (all three are live, it
// holds ⌊32/3⌋ or more leases, and its worker logged each of them taken, so their consumers are
// open); from the last instance's healthy /healthz until the cluster settled (every lease a live
// member's as well); and how many leases the whole join wrote (32 at best: each partition taken
// once, none handed over).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { clusterBucket } from "../../services/cluster/bucket.ts";
import { kvStream } from "../../services/nats/buckets.ts";
import { clusterView } from "../../services/cluster/view.ts";
import { startLocalCluster } from "../../services/cluster/local.ts";
import { DEFAULT_NAMES, namesToEnv, type InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { subjects } from "../../services/nats/subjects.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { freePort } from "../../services/util/processes.ts";
import { BenchChild } from "./child.ts";
import { roundRobin } from "./load.ts";

const PARTITIONS = 32;
const INSTANCES = 3;

export interface JoinRound {
  /** Per instance: first /healthz answer → its worker holds its share, ms. */
  healthToShare: number[];
  /** Per instance: spawned → first /healthz answer, ms. */
  spawnToHealth: number[];
  /** The last instance's first /healthz answer → every lease a live member's, each its share. */
  lastHealthToSettled: number;
  /** Leases written until every instance held its share: 32 when none was handed over. */
  leases: number;
}

async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(1_000),
    });
    return res.ok;
  } catch {
    return false;
  }
}

export async function joinRound(threads: number, perThread: number): Promise<JoinRound> {
  const dir = mkdtempSync(join(tmpdir(), "outline-bench-joins-"));
  const names: InfraNames = { ...DEFAULT_NAMES, partitions: PARTITIONS };
  const cluster = await startLocalCluster({ dir, names, partitions: PARTITIONS });
  const nc = await connectNats({ url: cluster.url, name: "bench-joins" });
  const children: BenchChild[] = [];
  let publishing = true;
  try {
    await ensureTopology(nc, names, { replicas: 3 });
    const js = jetstream(nc, { timeout: 30_000 });
    const s = subjects(names);
    const load = roundRobin(threads * perThread, threads, (t) => s.messageCreated(t));
    // The heavy load, published steadily from before the instances start until they have split.
    let sent = 0;
    const publisher = (async () => {
      const lane = async () => {
        while (publishing && sent < load.length) {
          const m = load[sent++];
          if (m) await js.publish(m.subject, m.data, { msgID: m.msgID }).catch(() => undefined);
        }
      };
      await Promise.all(Array.from({ length: 64 }, lane));
    })();
    while (sent < 1_000) await new Promise((r) => setTimeout(r, 50));

    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (!/^(HISTORY_|OUTLINE_|NATS_|PORT$|HOST$)/.test(key)) env[key] = value;
    }
    Object.assign(env, namesToEnv(names), {
      NATS_URL: cluster.url,
      OUTLINE_CONFIG: "",
      OUTLINE_REPLICAS: "3",
      HOST: "127.0.0.1",
      HISTORY_TAIL: "200,400",
      HISTORY_OUTLINE: "2000,4000",
      HISTORY_SUMMARIZER: "extractive",
    });
    const ports: number[] = [];
    for (let i = 0; i < INSTANCES; i++) ports.push(await freePort());
    // Every lease written over the join: a take (a handover writes it again for the new owner).
    // Watched from when the instances have made the bucket (they race to make it, as deployed).
    let leases = 0;
    const jsm = await jetstreamManager(nc);
    let watching = true;
    let stopWatch = () => {};
    const counting = (async () => {
      for (;;) {
        if (!watching) return;
        const made = await jsm.streams.info(kvStream(clusterBucket(names))).then(
          () => true,
          () => false,
        );
        if (made) {
          const kv = await new Kvm(js).open(clusterBucket(names));
          const watch = await kv.watch({ key: "lease.>" });
          stopWatch = () => watch.stop();
          for await (const e of watch) if (e.operation === "PUT") leases++;
          return;
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const spawned: number[] = [];
    /** Per instance: the partitions its worker said it took and still reads. */
    const reading: Set<number>[] = [];
    for (const [i, port] of ports.entries()) {
      spawned.push(performance.now());
      const child = new BenchChild(`instance ${i + 1}`, "services/start/bin.js", {
        ...env,
        PORT: String(port),
      });
      const mine = new Set<number>();
      reading.push(mine);
      const listed = (line: string, marker: string) =>
        line.includes(marker)
          ? (line.slice(line.indexOf(marker) + marker.length).match(/^[\d,]+/)?.[0] ?? "")
              .split(",")
              .map(Number)
          : [];
      child
        .waitFor((line) => {
          for (const k of listed(line, "took partitions ")) mine.add(k);
          for (const k of listed(line, "handed over partitions ")) mine.delete(k);
          if (line.includes("were taken over"))
            for (const k of listed(line, "partitions ")) mine.delete(k);
          if (process.env.BENCH_JOINS_VERBOSE)
            console.log(
              `  ${((performance.now() - (spawned[0] ?? 0)) / 1000).toFixed(1)} ${i + 1} ${line}`,
            );
          return false;
        }, 600_000)
        .catch(() => undefined);
      children.push(child);
    }
    const health: (number | undefined)[] = ports.map(() => undefined);
    const share: (number | undefined)[] = ports.map(() => undefined);
    let settled: number | undefined;
    const view = clusterView(nc, names);
    const deadline = performance.now() + 180_000;
    // Until each instance has answered /healthz and read its share, and the cluster settled.
    while (settled === undefined || [...share, ...health].some((t) => t === undefined)) {
      if (performance.now() > deadline)
        throw new Error(
          `the instances did not split the partitions in 180 s:\n${children.map((c) => c.output()).join("\n")}`,
        );
      await Promise.all(
        ports.map(async (port, i) => {
          if (health[i] === undefined && (await healthy(port))) health[i] = performance.now();
        }),
      );
      const v = await view().catch(() => undefined);
      const live = v?.members.filter((m) => m.live) ?? [];
      const leases = Object.entries(v?.leases ?? {});
      const now = performance.now();
      // A member's share: all three heard, and it reads ⌊32/3⌋ or more partitions it leases. A
      // hand-over between two others (their leases briefly free) does not hold it back.
      let shares = 0;
      for (const m of live.length === INSTANCES ? live : []) {
        const held = leases.filter(([, o]) => o === m.id);
        if (held.length < Math.floor(PARTITIONS / INSTANCES)) continue;
        // Which instance: its worker is a child of the instance's process.
        const i = children.findIndex((c) => isDescendant(m.pid, c.pid));
        if (i < 0 || !held.every(([k]) => reading[i]?.has(Number(k)))) continue;
        shares++;
        share[i] ??= now;
      }
      // Settled: every lease a live member's, each member its share.
      if (shares === INSTANCES && leases.length === PARTITIONS && settled === undefined)
        if (leases.every(([, o]) => live.some((m) => m.id === o))) settled = now;
      await new Promise((r) => setTimeout(r, 100));
    }
    watching = false;
    stopWatch();
    await counting;
    publishing = false;
    await publisher;
    return {
      healthToShare: share.map((t, i) => Math.max(0, (t as number) - (health[i] as number))),
      spawnToHealth: health.map((t, i) => (t as number) - (spawned[i] as number)),
      lastHealthToSettled: Math.max(0, settled - Math.max(...(health as number[]))),
      leases,
    };
  } finally {
    publishing = false;
    await Promise.all(children.map((c) => c.stop(20_000)));
    await nc.close();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Whether `pid` is `ancestor` or one of its descendants (from /proc). */
function isDescendant(pid: number, ancestor: number | undefined): boolean {
  if (ancestor === undefined) return false;
  let p = pid;
  for (let i = 0; i < 16 && p > 1; i++) {
    if (p === ancestor) return true;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return false;
    }
  }
  return false;
}
