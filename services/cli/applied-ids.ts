import type { NatsConnection } from "@nats-io/transport-node";
import { openBucketReads } from "./bucket-reads.ts";
import type { InfraNames } from "../config/names.ts";
import { kvStream, kvSubject, workerBucketNames } from "../nats/buckets.ts";
import { claimedSeq, idKey } from "../nats/id-index.ts";

/** Which message ids the worker has applied, as an import asks it (tests give fakes). */
export interface AppliedIds {
  /** Whether the worker has applied message `id` of `thread`. */
  has(thread: string, id: string): Promise<boolean>;
  /**
   * Whether the worker holds a snapshot of `thread`: then it is not deleted, or its erase (which
   * takes the snapshot last, eraser.ts) has not ended yet.
   */
  hasSnapshot(thread: string): Promise<boolean>;
  close(): void;
}

/** What a thread's snapshot says of its ids. */
interface Known {
  /** The tail's message ids: applied. */
  tail: Set<string>;
  /** The tail is the whole thread (isTailComplete, id-claims.ts): no ids in the index. */
  whole: boolean;
}

/** Threads whose snapshot is kept at once (each up to the tail's ids). */
const KEEP = 1_000;

const decoder = new TextDecoder();

/**
 * Reads what the worker applied by direct gets of single keys: a thread's snapshot (SPEC §8: its
 * tail's ids, and whether the tail is the whole thread), and for an id not in that tail, the
 * worker's id index (`<bucket>-ids`, id-index.ts), which holds every id of a thread once its
 * first cut took messages out of the tail. A thread with no snapshot is new for the rest of the
 * import; a snapshot behind the worker only lets a line be stored again (applied once).
 * Undefined when the buckets are not there (no worker has run on these names), cannot be read
 * (`onUnchecked` is told why) or do not allow direct gets.
 */
export async function openAppliedIds(
  nc: NatsConnection,
  names: Pick<InfraNames, "kvBucket">,
  onUnchecked: (reason: string) => void = () => undefined,
): Promise<AppliedIds | undefined> {
  const ids = workerBucketNames(names).ids;
  const streams = { snapshots: kvStream(names.kvBucket), ids: kvStream(ids) };
  const reads = await openBucketReads(nc, Object.values(streams), onUnchecked);
  if (!reads) return undefined;
  const { reader } = reads;
  const unknown = new Set<string>();
  // The last KEEP threads asked about, oldest first (a Map keeps insertion order).
  const known = new Map<string, Promise<Known | undefined>>();
  const snapshotOf = (thread: string): Promise<Known | undefined> => {
    let entry = known.get(thread);
    if (entry) {
      known.delete(thread);
    } else {
      entry = reader
        .lastBySubject(streams.snapshots, kvSubject(names.kvBucket, thread))
        .then((m) => (m && !m.headers?.get("KV-Operation") ? readKnown(m.data) : undefined));
      const oldest = known.size >= KEEP ? known.keys().next().value : undefined;
      if (oldest !== undefined) known.delete(oldest);
    }
    known.set(thread, entry);
    return entry;
  };
  return {
    async has(thread, id) {
      if (unknown.has(thread)) return false;
      const snapshot = await snapshotOf(thread);
      if (!snapshot) {
        unknown.add(thread);
        return false;
      }
      if (snapshot.tail.has(id)) return true;
      if (snapshot.whole) return false;
      const entry = await reader.lastBySubject(streams.ids, kvSubject(ids, idKey(thread, id)));
      // As claimMessageId reads it: a delete marker or garbage is no claim (claimed again).
      if (!entry || entry.headers?.get("KV-Operation")) return false;
      return claimedSeq(entry.data) !== undefined;
    },
    async hasSnapshot(thread) {
      return !unknown.has(thread) && (await snapshotOf(thread)) !== undefined;
    },
    close: () => reads.close(),
  };
}

/** A snapshot not of this shape (or not JSON) tells nothing: its thread's lines are published. */
function readKnown(data: Uint8Array): Known | undefined {
  let snapshot: { tail?: unknown; complete?: unknown; boundary?: unknown };
  try {
    snapshot = JSON.parse(decoder.decode(data)) as typeof snapshot;
  } catch {
    return undefined;
  }
  if (!Array.isArray(snapshot.tail)) return undefined;
  return {
    tail: new Set(snapshot.tail.filter((id): id is string => typeof id === "string")),
    whole: snapshot.complete === true && snapshot.boundary === 0,
  };
}
