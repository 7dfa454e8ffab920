import { StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { InfraNames } from "../config/names.ts";
import { startupStep } from "./startup-step.ts";

/**
 * The worker's own buckets, named after the snapshot bucket so that a test or a second
 * deployment with its own OUTLINE_KV_BUCKET gets its own set: `outline-actors` (the persisted
 * actor state per thread), `outline-ids` (which CHAT sequence first carried a message id) and
 * `outline-busy` (threads with summaries or cuts outstanding, woken at start).
 */
export interface WorkerBucketNames {
  actors: string;
  ids: string;
  busy: string;
}

export function workerBucketNames(names: Pick<InfraNames, "kvBucket">): WorkerBucketNames {
  return {
    actors: `${names.kvBucket}-actors`,
    ids: `${names.kvBucket}-ids`,
    busy: `${names.kvBucket}-busy`,
  };
}

export interface WorkerBuckets {
  names: WorkerBucketNames;
  /** key = thread; value = PersistedThread JSON (see actor-store.ts). */
  actors: KV;
  /** key = `<thread>.<hash(message id)>`; value = the CHAT sequence that first carried it. */
  ids: KV;
  /** key = thread, present while the thread has work outstanding (see busy-index.ts). */
  busy: KV;
  /** The snapshot bucket of SPEC §8 (created by ensureTopology). */
  snapshots: KV;
}

/** The KV stream's subject for one key: a purge by this filter leaves nothing of the key. */
export const kvSubject = (bucket: string, key: string): string => `$KV.${bucket}.${key}`;
export const kvStream = (bucket: string): string => `KV_${bucket}`;

/**
 * The keys of `bucket` that hold a message (a delete marker included), from one stream info. Not
 * `kv.keys()`: that opens a consumer on the stream, which a loaded R3 cluster failed to answer
 * (the cluster test's case (b)), and which can list a key written meanwhile twice.
 */
export async function kvKeys(jsm: JetStreamManager, bucket: string): Promise<string[]> {
  const prefix = kvSubject(bucket, "");
  const info = await jsm.streams.info(kvStream(bucket), { subjects_filter: `${prefix}>` });
  return Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length));
}

/**
 * Creates the worker's buckets when missing and opens them (an existing bucket is used as is).
 * File storage and history 1: only the latest value matters. Call after ensureTopology. Each
 * create is asked again while it meets another instance's create of the same bucket (a new R3
 * stream answers nothing until it has a leader), so instances may start at once.
 */
export async function ensureWorkerBuckets(
  js: JetStreamClient,
  _jsm: JetStreamManager,
  names: InfraNames,
  replicas = 1,
  log?: (line: string) => void,
): Promise<WorkerBuckets> {
  const kvm = new Kvm(js);
  const bucketNames = workerBucketNames(names);
  const create = (bucket: string, description: string) =>
    startupStep(
      `creating bucket ${bucket} (stream ${kvStream(bucket)}, R${replicas})`,
      () => kvm.create(bucket, { history: 1, storage: StorageType.File, replicas, description }),
      log ? { log } : {},
    );
  await create(
    bucketNames.actors,
    "Thread actor state per thread (tail texts stripped: they are read back from CHAT by sequence)",
  );
  await create(
    bucketNames.ids,
    "Message ids applied per thread: <thread>.<hash(id)> = first CHAT sequence, so an id re-published after the duplicate window is applied once",
  );
  await create(
    bucketNames.busy,
    "Threads with summaries or cuts outstanding: a worker starting wakes them, since no new event may come",
  );
  // Read through the stream's leader: `Kvm.open` binds without direct gets, which any replica
  // answers, one that has not applied the last write yet included (nats-server < 2.12). A
  // thread's new owner must read its old owner's last save, and a fenced write's revision.
  return {
    names: bucketNames,
    actors: await kvm.open(bucketNames.actors),
    ids: await kvm.open(bucketNames.ids),
    busy: await kvm.open(bucketNames.busy),
    snapshots: await kvm.open(names.kvBucket),
  };
}
