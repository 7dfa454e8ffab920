import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { sameBytes } from "../nats/same-bytes.ts";
import { METRIC } from "./metrics.ts";
import { retryInPlace } from "./retry.ts";
import type { WorkerContext } from "./worker-context.ts";

/** What `notOlder` compares of a snapshot. */
export type SnapshotMark = Pick<OutlineSnapshot, "seq" | "boundary" | "pending">;

/** Whether `ours` reflects at least as much of the log as `theirs` (never go back). */
export function notOlder(
  ours: SnapshotMark,
  theirs: Partial<OutlineSnapshot> | undefined,
): boolean {
  if (!theirs || typeof theirs.seq !== "number") return true;
  if (ours.seq !== theirs.seq) return ours.seq > theirs.seq;
  const theirJobs = theirs.pending?.jobs ?? Number.POSITIVE_INFINITY;
  return ours.boundary >= (theirs.boundary ?? 0) && ours.pending.jobs <= theirJobs;
}

/** A stored snapshot's fields, or undefined when it is not JSON (then any write may replace it). */
export function parseSnapshot(value: Uint8Array): Partial<OutlineSnapshot> | undefined {
  try {
    return JSON.parse(new TextDecoder().decode(value)) as Partial<OutlineSnapshot>;
  } catch {
    return undefined;
  }
}

/**
 * Writes a thread's outline snapshot (SPEC §8) to the snapshot bucket, fenced on the revision
 * this worker last wrote. When someone else wrote the key meanwhile (another worker that took the
 * thread over, or a replay into the live bucket), the stored one is replaced only if ours
 * reflects at least as much of the log: a worker that just lost a thread never puts an older
 * outline back. `bytes` is the snapshot (`encodeSnapshot`), `snapshot` what it shows of the log.
 * Returns the revision now stored.
 */
export async function writeSnapshot(
  ctx: WorkerContext,
  thread: string,
  bytes: Uint8Array,
  snapshot: SnapshotMark,
  revision: number,
  signal: AbortSignal,
): Promise<number> {
  const kv = ctx.kv.snapshots;
  let expected = revision;
  const written = await retryInPlace(
    async () => {
      try {
        return expected === 0
          ? await kv.create(thread, bytes)
          : await kv.update(thread, bytes, expected);
      } catch (err) {
        if (!(
          err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence
        )) {
          throw err;
        }
        const current = await kv.get(thread);
        if (current?.operation === "PUT" && sameBytes(current.value, bytes))
          return current.revision;
        if (current?.operation === "PUT" && !notOlder(snapshot, parseSnapshot(current.value))) {
          ctx.log.warn(
            `snapshot of thread '${thread}' in bucket ${ctx.names.kvBucket} is newer than this worker's (another worker has the thread); leaving it`,
          );
          return current.revision;
        }
        ctx.log.warn(
          `snapshot of thread '${thread}' in bucket ${ctx.names.kvBucket} was written by someone else; writing this worker's newer one over it`,
        );
        expected = current?.revision ?? 0;
        throw err;
      }
    },
    { what: `write the snapshot of thread '${thread}'`, log: ctx.retries, signal, baseMs: 20 },
  );
  ctx.metrics.add(METRIC.snapshotWrites);
  return written;
}
