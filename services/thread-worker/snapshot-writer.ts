import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { sameBytes } from "./actor-store.ts";
import { M } from "./metrics.ts";
import { retryInPlace } from "./retry.ts";
import type { WorkerContext } from "./worker-context.ts";

const encoder = new TextEncoder();

/**
 * Writes a thread's outline snapshot (SPEC §8) to the snapshot bucket, fenced on the revision
 * this worker last wrote. A snapshot is derived data, so when someone else wrote the key (a
 * replay into the live bucket) the newer state of the log wins: the revision is re-read and the
 * write repeated, with a warning. Returns the new revision.
 */
export async function writeSnapshot(
  ctx: WorkerContext,
  thread: string,
  snapshot: OutlineSnapshot,
  revision: number,
  signal: AbortSignal,
): Promise<number> {
  const kv = ctx.buckets.snapshots;
  const bytes = encoder.encode(JSON.stringify(snapshot));
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
        ctx.log.warn(
          `snapshot of thread '${thread}' in bucket ${ctx.names.kvBucket} was written by someone else; writing this worker's newer one over it`,
        );
        expected = current?.revision ?? 0;
        throw err;
      }
    },
    { what: `write the snapshot of thread '${thread}'`, log: ctx.log, signal, baseMs: 20 },
  );
  ctx.metrics.add(M.snapshotWrites);
  return written;
}
