import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { headers, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { clusterBucket, readCluster, type MemberInfo } from "./bucket.ts";
import { DEFAULT_FAILOVER_MS } from "./membership.ts";

/** `GET /cluster`, `<apiPrefix>.cluster` and `outline cluster` (SPEC §9). */
export interface ClusterAnswer {
  mode: "single" | "partitioned";
  members: (MemberInfo & { live: boolean; heardMsAgo: number })[];
  /** How many partitions the threads are split into; 0 in single mode. */
  partitions: number;
  /** Partition → member holding it. */
  leases: Record<string, string>;
}

/** The subject the same answer is served on over NATS. */
export const clusterSubject = (names: Pick<InfraNames, "apiPrefix">): string =>
  `${names.apiPrefix}.cluster`;

/**
 * Reads who owns what from the cluster bucket, opened on first use (the workers create it).
 * Without the bucket the instances run in single mode: one worker owns every thread. `strict`:
 * only a bucket that is not there means that; one that cannot be read (a NATS user that may not)
 * throws, rather than answer "single" for a cluster it did not see.
 */
export function clusterView(
  nc: NatsConnection,
  names: InfraNames,
  failoverMs = DEFAULT_FAILOVER_MS,
  { strict = false }: { strict?: boolean } = {},
): () => Promise<ClusterAnswer> {
  let bucket: KV | undefined;
  let jsm: JetStreamManager | undefined;
  return async () => {
    if (!bucket || !jsm) {
      try {
        bucket = await new Kvm(jetstream(nc)).open(clusterBucket(names), { bindOnly: true });
        await bucket.status();
        jsm = await jetstreamManager(nc);
      } catch (err) {
        bucket = undefined;
        const missing =
          err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
        if (strict && !missing) throw err;
        return { mode: "single", members: [], partitions: 0, leases: {} };
      }
    }
    const view = await readCluster(bucket, jsm, names, failoverMs);
    return { mode: "partitioned", ...view };
  };
}

/** A reply with the HTTP status the same request would have had, as every `<apiPrefix>.<op>`. */
function statusHeader(status: number) {
  const h = headers();
  h.set("Outline-Status", String(status));
  return { headers: h };
}

/**
 * Answers `<apiPrefix>.cluster` with the same JSON and status as GET /cluster (any instance may
 * answer): 200, or 500 when the view cannot be read, as HTTP answers then.
 */
export function serveCluster(
  nc: NatsConnection,
  names: InfraNames,
  view: () => Promise<ClusterAnswer>,
  log: (line: string) => void,
): { subscription: Subscription; drain(): Promise<void> } {
  const sub = nc.subscribe(clusterSubject(names), {
    queue: "outline-prompt-builder",
    callback: (err, msg) => {
      if (err) return;
      view().then(
        (answer) => msg.respond(JSON.stringify(answer), statusHeader(200)),
        (e: unknown) => {
          log(`prompt-builder: cluster view failed: ${(e as Error).message}`);
          msg.respond(
            JSON.stringify({
              error: { code: "CLUSTER_UNAVAILABLE", message: (e as Error).message },
            }),
            statusHeader(500),
          );
        },
      );
    },
  });
  return { subscription: sub, drain: async () => (sub.isClosed() ? undefined : sub.drain()) };
}

/** The answer as `outline cluster` prints it: one row per member. */
export function clusterTable(answer: ClusterAnswer): string[] {
  if (answer.mode === "single") {
    return [
      "single mode (OUTLINE_PARTITIONS unset): one worker owns every thread; see docs/scale-out.md",
    ];
  }
  const held = Object.keys(answer.leases).length;
  const lines = [
    `${answer.partitions} partitions, ${held} held, ${answer.members.filter((m) => m.live).length} live member(s)`,
  ];
  for (const m of answer.members) {
    const state = m.leaving
      ? "leaving"
      : m.live
        ? "live"
        : `silent ${Math.round(m.heardMsAgo / 1000)} s`;
    lines.push(
      `${m.id}  ${state}  ${m.host} pid ${m.pid} since ${m.since}  threads ${m.threads}  lag ${m.lag}  partitions [${m.partitions.join(",")}]`,
    );
  }
  return lines;
}
