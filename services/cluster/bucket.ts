import { StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { InfraNames } from "../config/names.ts";
import { kvKeys } from "../thread-worker/buckets.ts";

// The cluster bucket: its layout, each member's heartbeat and each partition's lease.

/** The bucket of the layout, heartbeats and leases (docs/scale-out.md). */
export const clusterBucket = (names: Pick<InfraNames, "kvBucket">): string =>
  `${names.kvBucket}-cluster`;

/** One member as its heartbeat says (and as `GET /cluster` shows it). */
export interface MemberInfo {
  id: string;
  host: string;
  pid: number;
  /** ISO time it joined. */
  since: string;
  capacity: number;
  partitions: number[];
  /** Threads in memory. */
  threads: number;
  /** Events stored and not yet delivered to it, over its partitions. */
  lag: number;
  leaving?: boolean;
}

export interface ClusterView {
  members: (MemberInfo & { live: boolean; heardMsAgo: number })[];
  partitions: number;
  /** Partition → member holding its lease. */
  leases: Record<string, string>;
}

export const memberKey = (id: string) => `member.${id}`;
export const leaseKey = (k: number) => `lease.${k}`;

export async function openClusterBucket(
  js: JetStreamClient,
  names: InfraNames,
  replicas: number,
): Promise<KV> {
  const kvm = new Kvm(js);
  await kvm.create(clusterBucket(names), {
    history: 1,
    storage: StorageType.File,
    replicas,
    description: "outline instances: layout, member.<id> heartbeats, lease.<partition>",
  });
  // Read through the leader (no direct gets): a lagging replica's answer could make a member
  // that just beat look silent (thread-worker/buckets.ts says more).
  return kvm.open(clusterBucket(names));
}

/** One key of the bucket as read: what `clusterViewOf` needs of a `KvEntry`. */
export type ClusterEntry = Pick<KvEntry, "key" | "operation" | "created" | "json">;

/** Reads the bucket once: what `GET /cluster` and `outline cluster` show. */
export async function readCluster(
  kv: KV,
  jsm: JetStreamManager,
  names: Pick<InfraNames, "kvBucket">,
  failoverMs: number,
): Promise<ClusterView> {
  const keys = await kvKeys(jsm, clusterBucket(names));
  const entries = await Promise.all(keys.map((key) => kv.get(key)));
  return clusterViewOf(
    entries.filter((e) => e !== null),
    Date.now(),
    failoverMs,
  );
}

/**
 * The view of the bucket's keys at `now`. A member that is not live shows the partitions its
 * leases still name, not those of its last heartbeat: once the others took them it shows none,
 * and no threads or lag (they are counted by the new owners), so the members' partitions never
 * add up to more than the partition count.
 */
export function clusterViewOf(
  entries: readonly ClusterEntry[],
  now: number,
  failoverMs: number,
): ClusterView {
  const view: ClusterView = { members: [], partitions: 0, leases: {} };
  for (const entry of entries) {
    if (entry.operation !== "PUT") continue;
    const key = entry.key;
    if (key === "layout") {
      view.partitions = entry.json<{ partitions: number }>().partitions ?? 0;
    } else if (key.startsWith("member.")) {
      const info = entry.json<MemberInfo>();
      const heardMsAgo = Math.max(0, now - entry.created.getTime());
      view.members.push({ ...info, live: !info.leaving && heardMsAgo <= failoverMs, heardMsAgo });
    } else if (key.startsWith("lease.")) {
      view.leases[key.slice("lease.".length)] = entry.json<{ member: string }>().member;
    }
  }
  for (const m of view.members) {
    if (m.live) continue;
    m.partitions = Object.entries(view.leases)
      .filter(([, holder]) => holder === m.id)
      .map(([k]) => Number(k))
      .sort((a, b) => a - b);
    if (m.partitions.length === 0) [m.threads, m.lag] = [0, 0];
  }
  view.members.sort((a, b) => (a.id < b.id ? -1 : 1));
  return view;
}

export async function checkLayout(kv: KV, partitions: number): Promise<void> {
  const layout = await kv.get("layout");
  if (!layout || layout.operation !== "PUT") {
    try {
      await kv.create("layout", JSON.stringify({ partitions }));
      return;
    } catch {
      return checkLayout(kv, partitions);
    }
  }
  const stored = layout.json<{ partitions: number }>().partitions;
  if (stored !== partitions) {
    throw new Error(
      `OUTLINE_PARTITIONS is ${partitions} but the cluster runs ${stored} partitions (key 'layout' of its bucket): set OUTLINE_PARTITIONS=${stored}, the N of the server's {{partition(N,1)}} mapping; changing N needs every instance stopped and the mapping changed with it (docs/scale-out.md)`,
    );
  }
}
