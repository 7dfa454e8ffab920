import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { MemberInfo, SingleWorker } from "../../shared/api.ts";
import {
  JetStreamApiCodes,
  JetStreamApiError,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { InfraNames } from "../config/names.ts";
import { startupStep } from "../nats/startup-step.ts";
import { kvKeys, kvStream } from "../nats/buckets.ts";

// The cluster bucket: its layout, each member's heartbeat and each partition's lease.

/** The bucket of the layout, heartbeats and leases (docs/scale-out.md). */
export const clusterBucket = (names: Pick<InfraNames, "kvBucket">): string =>
  `${names.kvBucket}-cluster`;

/** One member as its heartbeat says (and as `GET /cluster` shows it). */
export type { MemberInfo };

export interface ClusterView {
  members: (MemberInfo & { live: boolean; heardMsAgo: number })[];
  partitions: number;
  /** Partition → member holding its lease. */
  leases: Record<string, string>;
  /** Single-mode workers' heartbeats (`single.<id>`, services/thread-worker/single-peers.ts). */
  workers: SingleWorker[];
}

/** A new member's id: its host, process and a few random bytes. */
export function memberId(): string {
  const host = hostname()
    .replace(/[^A-Za-z0-9_-]/g, "-")
    .slice(0, 40);
  return `${host}-${process.pid}-${randomBytes(2).toString("hex")}`;
}

export const memberKey = (id: string) => `member.${id}`;
export const leaseKey = (k: number) => `lease.${k}`;

/**
 * Creates the cluster bucket when missing and opens it. The create is asked again while it meets
 * another instance's (instances starting at once on a fresh cluster make it together).
 */
export async function openClusterBucket(
  js: JetStreamClient,
  names: InfraNames,
  replicas: number,
  log?: (line: string) => void,
): Promise<KV> {
  const kvm = new Kvm(js);
  const bucket = clusterBucket(names);
  await startupStep(
    `creating bucket ${bucket} (stream ${kvStream(bucket)}, R${replicas})`,
    () =>
      kvm.create(bucket, {
        history: 1,
        storage: StorageType.File,
        replicas,
        description: "outline instances: layout, member.<id> heartbeats, lease.<partition>",
      }),
    log ? { log } : {},
  );
  // Read through the leader (no direct gets): a lagging replica's answer could make a member
  // that just beat look silent (nats/buckets.ts says more).
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
  const view: ClusterView = { members: [], partitions: 0, leases: {}, workers: [] };
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
    } else if (key.startsWith("single.")) {
      const { id, host, pid, since } = entry.json<SingleWorker>();
      const heardMsAgo = Math.max(0, now - entry.created.getTime());
      view.workers.push({ id, host, pid, since, live: heardMsAgo <= failoverMs, heardMsAgo });
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
  view.workers.sort((a, b) => (a.since < b.since ? -1 : 1));
  return view;
}

/** A create of a key that holds a value: another member wrote it first. */
const keyExists = (err: unknown) =>
  err instanceof JetStreamApiError &&
  (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
    err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);

/**
 * Writes the layout if no member did, or checks it. Each request is asked again while the
 * bucket's stream, made a moment ago, has no leader yet (startupStep).
 */
export async function checkLayout(
  kv: KV,
  partitions: number,
  names: Pick<InfraNames, "kvBucket">,
  log?: (line: string) => void,
): Promise<void> {
  const bucket = clusterBucket(names);
  const opts = log ? { log } : {};
  // A round or two: a create refused as the key exists is followed by a read that finds it.
  for (let round = 0; ; round++) {
    const layout = await startupStep(
      `reading key 'layout' of bucket ${bucket}`,
      () => kv.get("layout"),
      opts,
    );
    if (layout?.operation === "PUT") {
      const stored = layout.json<{ partitions: number }>().partitions;
      if (stored === partitions) return;
      throw new Error(
        `OUTLINE_PARTITIONS is ${partitions} but the cluster runs ${stored} partitions (key 'layout' of its bucket): set OUTLINE_PARTITIONS=${stored}, the N of the server's {{partition(N,1)}} mapping; changing N needs every instance stopped and the mapping changed with it (docs/scale-out.md)`,
      );
    }
    if (round > 2)
      throw new Error(`key 'layout' of bucket ${bucket} is neither readable nor writable`);
    // Asked again after a lost answer, our own write is found as a key that exists: read next.
    const created = await startupStep(
      `writing key 'layout' of bucket ${bucket}`,
      () =>
        kv.create("layout", JSON.stringify({ partitions })).then(
          () => true,
          (err: unknown) => {
            if (keyExists(err)) return false;
            throw err;
          },
        ),
      opts,
    );
    if (created) return;
  }
}
