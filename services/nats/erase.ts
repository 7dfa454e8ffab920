// Erasing one subject's messages from a stream that other consumers read.
//
// nats-server before 2.10.0 moves every consumer whose filter covers a purged subject to the end
// of the stream on a purge by subject (nats-io/nats-server#3838: `o.purge(fseq, lseq)` with
// fseq = 0 sends the consumer to lseq + 1 and forgets its pending acks). A worker's consumer on
// `chat.>` then never receives the other threads' events stored but not yet delivered, and never
// gets its unacknowledged deliveries again: messages are lost. Deleting the messages one by one
// leaves every consumer where it was, so on such servers that is what we do.
import type { JetStreamManager } from "@nats-io/jetstream";

/** Whether a purge by subject leaves consumers with a wider filter alone (nats-server ≥ 2.10.0). */
export function purgeBySubjectIsSafe(version: string | undefined): boolean {
  const match = /^v?(\d+)\.(\d+)/.exec(version ?? "");
  if (!match) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major > 2 || (major === 2 && minor >= 10);
}

export interface EraseOptions {
  /** Only messages below this sequence (a purge's `seq`); all of them when absent. */
  below?: number;
  /** Purge by subject (one request) instead of deleting each message. */
  purge: boolean;
  /** Deletes in flight at once. */
  parallel?: number;
}

/** Removes the messages of `filter` from `stream`; returns how many were removed. */
export async function eraseSubject(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  options: EraseOptions,
): Promise<number> {
  const below = options.below ?? Number.MAX_SAFE_INTEGER;
  if (options.purge) {
    const { purged } = await jsm.streams.purge(stream, {
      filter,
      ...(options.below !== undefined ? { seq: options.below } : {}),
    });
    return purged;
  }
  const parallel = options.parallel ?? 64;
  let removed = 0;
  let from = 1;
  for (;;) {
    // Find the next `parallel` messages of the subject, then delete them together.
    const seqs: number[] = [];
    while (seqs.length < parallel) {
      const next = await jsm.direct.getMessage(stream, { next_by_subj: filter, seq: from });
      if (!next || next.seq >= below) break;
      seqs.push(next.seq);
      from = next.seq + 1;
    }
    if (seqs.length === 0) return removed;
    const done = await Promise.all(seqs.map((seq) => deleteIfThere(jsm, stream, seq)));
    removed += done.filter(Boolean).length;
    if (seqs.length < parallel) return removed;
  }
}

/** A message deleted meanwhile (another worker erasing too) is not an error. */
async function deleteIfThere(jsm: JetStreamManager, stream: string, seq: number): Promise<boolean> {
  try {
    return await jsm.streams.deleteMessage(stream, seq, false);
  } catch (err) {
    if (/no message found|not found/i.test(String((err as Error).message))) return false;
    throw err;
  }
}
