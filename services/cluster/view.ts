import type { ClusterAnswer } from "../../shared/api.ts";
import {
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { isTransient } from "../nats/transient.ts";
import { ApiError } from "../api/api-error.ts";
import { statusHeaders } from "../api/nats-wire.ts";
import { clusterBucket, readCluster, type ClusterView } from "./bucket.ts";
import { DEFAULT_FAILOVER_MS } from "./failover.ts";

/** `GET /cluster`, `<apiPrefix>.cluster` and `outline cluster` (SPEC §9). */
export type { ClusterAnswer };

/** The subject the same answer is served on over NATS. */
export const clusterSubject = (names: Pick<InfraNames, "apiPrefix">): string =>
  `${names.apiPrefix}.cluster`;

/** Seconds after which asking again may find the bucket's stream with a leader again. */
export const CLUSTER_RETRY_AFTER_S = 2;

/**
 * A read of the bucket that met a leader election (a server of the cluster died or rejoined):
 * the stream answers nothing for a few seconds. Said as such, with when to ask again, rather
 * than as the prompt-builder's own failure; anything else is left as it is.
 */
export function unavailableOr(err: unknown, names: Pick<InfraNames, "kvBucket">): unknown {
  if (!isTransient(err)) return err;
  return new ApiError(
    503,
    "CLUSTER_UNAVAILABLE",
    `the cluster bucket (stream KV_${clusterBucket(names)}) did not answer: ${(err as Error).message}; its servers may be electing a leader after one left, which takes a few seconds; ask again in ${CLUSTER_RETRY_AFTER_S} s`,
    { retryAfter: CLUSTER_RETRY_AFTER_S },
  );
}

/**
 * Reads who owns what from the cluster bucket, opened on first use (the workers create it).
 * Without the bucket the instances run in single mode: one worker owns every thread. A bucket
 * that does not answer (an election) is a 503 CLUSTER_UNAVAILABLE with a Retry-After. `strict`:
 * only a bucket that is not there means single mode; one that cannot be read (a NATS user that
 * may not) throws, rather than answer "single" for a cluster it did not see.
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
    try {
      if (!bucket || !jsm) {
        let opened: KV;
        try {
          opened = await new Kvm(jetstream(nc)).open(clusterBucket(names), { bindOnly: true });
          await opened.status();
        } catch (err) {
          // Only a bucket that is not there means single mode; a timeout says nothing.
          if (isTransient(err)) throw err;
          const missing =
            err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
          if (strict && !missing) throw err;
          return { mode: "single", members: [], partitions: 0, leases: {}, workers: [] };
        }
        jsm = await jetstreamManager(nc);
        bucket = opened;
      }
      return clusterAnswerOf(await readCluster(bucket, jsm, names, failoverMs));
    } catch (err) {
      throw unavailableOr(err, names);
    }
  };
}

/**
 * The answer for a view of the bucket. Single-mode workers make the bucket for their heartbeats:
 * single mode when no member wrote a layout, or none is live while one of them is (a cluster
 * ran on these streams before).
 */
export function clusterAnswerOf({ workers, ...view }: ClusterView): ClusterAnswer {
  const live = (xs: readonly { live: boolean }[]) => xs.some((x) => x.live);
  if (
    (view.partitions === 0 && view.members.length === 0) ||
    (live(workers) && !live(view.members))
  )
    return { mode: "single", members: [], partitions: 0, leases: {}, workers };
  return { mode: "partitioned", ...view };
}

/**
 * Answers `<apiPrefix>.cluster` with the same JSON and status as GET /cluster (any instance may
 * answer): 200, 503 while the bucket elects a leader, or 500 when the view cannot be read, as
 * HTTP answers then.
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
        (answer) => msg.respond(JSON.stringify(answer), statusHeaders(200)),
        (e: unknown) => {
          log(`prompt-builder: cluster view failed: ${(e as Error).message}`);
          // As the NATS API answers errors: the HTTP status in Outline-Status.
          const status = e instanceof ApiError ? e.status : 500;
          const code = e instanceof ApiError ? e.code : "CLUSTER_UNAVAILABLE";
          msg.respond(
            JSON.stringify({ error: { code, message: (e as Error).message } }),
            statusHeaders(status, e instanceof ApiError ? e.retryAfter : undefined),
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
    const workers = answer.workers ?? [];
    return [
      `single mode (OUTLINE_PARTITIONS unset, and the server maps no chat subjects): one worker owns every thread; see docs/scale-out.md; ${workers.filter((w) => w.live).length} live worker(s)`,
      ...workers.map(
        (w) =>
          `${w.id}  ${w.live ? "live" : `silent ${Math.round(w.heardMsAgo / 1000)} s`}  ${w.host} pid ${w.pid} since ${w.since}`,
      ),
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
