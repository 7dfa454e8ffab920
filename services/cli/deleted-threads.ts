import type { NatsConnection } from "@nats-io/transport-node";
import { openBucketReads } from "./bucket-reads.ts";
import type { InfraNames } from "../config/names.ts";
import { kvStream, kvSubject, workerBucketNames } from "../nats/buckets.ts";

/** What the CLI says of a line or a message for a deleted thread (import and send alike). */
export const deletedThreadReason = (thread: string): string =>
  `thread '${thread}' was deleted; its id takes no new messages (use a new thread id)`;

/** Which threads the worker has deleted, as the CLI asks before publishing (tests give fakes). */
export interface DeletedThreads {
  /** Whether the worker applied a thread.deleted of `thread` (its messages would be dead letters). */
  isDeleted(thread: string): Promise<boolean>;
  close(): void;
}

/** Threads whose answer is kept (a Map entry each; an import asks once per thread). */
const KEEP = 10_000;

const decoder = new TextDecoder();

/**
 * Reads the worker's tombstones: a deleted thread keeps its actor record in `<bucket>-actors`
 * (actor-store.ts) with `deleted` set, saved before anything of it is erased and never removed,
 * since a deleted thread's id stays taken (SPEC §4). One direct get of that key per thread, the
 * answers of the last KEEP threads kept. Undefined when the bucket is not there (no worker has
 * run on these names: nothing was deleted), cannot be read (`onUnchecked` is told why) or does
 * not allow direct gets.
 */
export async function openDeletedThreads(
  nc: NatsConnection,
  names: Pick<InfraNames, "kvBucket">,
  onUnchecked: (reason: string) => void = () => undefined,
): Promise<DeletedThreads | undefined> {
  const bucket = workerBucketNames(names).actors;
  const stream = kvStream(bucket);
  const reads = await openBucketReads(nc, [stream], onUnchecked);
  if (!reads) return undefined;
  const { reader } = reads;
  // Oldest first (a Map keeps insertion order).
  const known = new Map<string, Promise<boolean>>();
  return {
    isDeleted(thread) {
      let answer = known.get(thread);
      if (answer) return answer;
      answer = reader
        .lastBySubject(stream, kvSubject(bucket, thread))
        .then((m) => (m && !m.headers?.get("KV-Operation") ? isTombstone(m.data) : false));
      // A failed read is not kept: it is asked again (the caller decides whether to go on).
      answer.catch(() => known.delete(thread));
      const oldest = known.size >= KEEP ? known.keys().next().value : undefined;
      if (oldest !== undefined) known.delete(oldest);
      known.set(thread, answer);
      return answer;
    },
    close: () => reads.close(),
  };
}

/** An actor record whose core says `deleted` (one not of that shape tells nothing: not deleted). */
function isTombstone(data: Uint8Array): boolean {
  try {
    const record = JSON.parse(decoder.decode(data)) as {
      snapshot?: { context?: { core?: { deleted?: unknown } } };
    };
    return record.snapshot?.context?.core?.deleted === true;
  } catch {
    return false;
  }
}
