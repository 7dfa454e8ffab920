import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { ApiError } from "../api/api-error.ts";

/**
 * `Kvm.open` reads through the stream's JSON API (the value base64-encoded, decoded again on
 * every access) unless told the stream allows direct gets; a 100 KB snapshot then cost a few
 * milliseconds per prompt (bench prompt). The stream's own config decides; a user not allowed to
 * read stream info gets the plain reads.
 */
async function openDirect(nc: NatsConnection, bucket: string): Promise<Bucket> {
  let direct = false;
  let latestOnly = false;
  try {
    const info = await (await jetstreamManager(nc)).streams.info(`KV_${bucket}`);
    direct = info.config.allow_direct === true;
    latestOnly = info.config.max_msgs_per_subject === 1;
  } catch {
    // Fall through to the plain reads; `open` reports a bucket that does not exist.
  }
  const kv = await new Kvm(jetstream(nc)).open(bucket, direct ? { allow_direct: true } : {});
  return { kv, direct, latestOnly };
}

/** Opens the snapshot bucket once (again after a failure); `opened`, the bucket once open. */
export interface LazyBucket {
  (): Promise<Bucket>;
  /** Without waiting a microtask: a turn's reads sent beside it then leave in one write. */
  opened(): Bucket | undefined;
}

/** The snapshot bucket, and whether its stream allows direct gets (read on our own inbox then). */
export interface Bucket {
  kv: KV;
  direct: boolean;
  /** History 1: a key has at most one message, so the first after a revision is its value. */
  latestOnly: boolean;
}

// The snapshot bucket is opened (not created) on first use and again after a failure: the
// prompt-builder may start before the worker has created the topology, and its NATS user may
// not be allowed to create streams at all.
export function lazyBucket(nc: NatsConnection, bucket: string): LazyBucket {
  let opening: Promise<Bucket> | undefined;
  let opened: Bucket | undefined;
  const open = () => {
    opening ??= openDirect(nc, bucket).then(
      (b) => (opened = b),
      (err: unknown) => {
        opening = undefined;
        throw new ApiError(
          503,
          "BUCKET_UNAVAILABLE",
          `cannot open the snapshot bucket '${bucket}' (OUTLINE_KV_BUCKET): ${(err as Error).message}; start the thread worker, which creates it, or check the NATS user's permissions`,
        );
      },
    );
    return opening;
  };
  return Object.assign(open, { opened: () => opened });
}
