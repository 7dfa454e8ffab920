import type { JetStreamManager, MsgRequest } from "@nats-io/jetstream";
import { DEAD_LETTER_HEADERS } from "../nats/dead-letter.ts";
import { eraseSubject } from "../nats/erase.ts";
import { kvStream, kvSubject } from "../nats/buckets.ts";
import { eraseIdIndex } from "../nats/id-index.ts";
import type { SlotTools } from "./slot-tools.ts";

/**
 * Purges the thread's CHAT events up to `seen`. Their dead letters go with eraseThread; those of
 * events after the delete (refused: "thread deleted") are recorded anew and stay.
 */
export async function purgeChat(tools: SlotTools, seen: number): Promise<void> {
  const { ctx, thread } = tools;
  await tools.retry("erase the thread's chat events", () =>
    eraseSubject(ctx.jsm, ctx.names.chatStream, ctx.subjects.threadChat(thread), {
      below: seen + 1,
      purge: ctx.purgeBySubject,
    }),
  );
  // Only a purge can move the consumer (see services/nats/erase.ts); deletes leave it where it
  // was. Either way no slot counts on having been given every event until each reads CHAT once.
  ctx.deliveries.interrupt();
}

/**
 * The DEAD sequence that ends a deleted thread's letters: that of its first letter of a CHAT event
 * after the delete (`deletedAt`), undefined when there is none. Those are refused ("thread
 * deleted") and recorded to tell the sender; one may come in the burst that applied the delete,
 * before the erase, and must stay. The thread's letters are in the order its slot recorded
 * them, so most deletes read just the last; one with a later letter reads each letter once.
 */
export async function lettersAfterDelete(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  chatStream: string,
  deletedAt: number,
): Promise<number | undefined> {
  const after = (m: { header: { get(k: string): string } }) =>
    m.header.get(DEAD_LETTER_HEADERS.stream) === chatStream &&
    Number(m.header.get(DEAD_LETTER_HEADERS.seq) || 0) > deletedAt;
  const last = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(notFound);
  if (!last || !after(last)) return undefined;
  for (let from = 1; ;) {
    // STREAM.MSG.GET takes next_by_subj since nats-server 2.9, which the client's type omits.
    const request = { next_by_subj: subject, seq: from } as unknown as MsgRequest;
    const next = await jsm.streams.getMessage(stream, request).catch(notFound);
    if (!next || next.seq >= last.seq) return last.seq;
    if (after(next)) return next.seq;
    from = next.seq + 1;
  }
}

const notFound = (err: unknown) => {
  if (/no message found|not found/i.test(String((err as Error).message))) return null;
  throw err;
};

/**
 * Erases everything of a deleted thread, its tombstone saved already: CHAT up to the delete,
 * HISTORY, the id index, its dead letters and the snapshot, in that order. CHAT first and the
 * snapshot last: the API answers 404 once a thread has neither, so while the erase runs (one
 * delete per message on servers before 2.10) it can fail a request for the thread, but never
 * serve its messages as a thread without a snapshot. `deletedAt` is the delete's CHAT sequence,
 * `seen` the last event the thread has taken (later ones may follow in the delete's burst).
 */
export async function eraseThread(
  tools: SlotTools,
  seen: number,
  deletedAt: number,
): Promise<void> {
  const { ctx, thread } = tools;
  const { jsm, names, subjects, buckets } = ctx;
  const purge = ctx.purgeBySubject;
  await purgeChat(tools, seen);
  await tools.retry("erase the thread's summaries", () =>
    eraseSubject(jsm, names.historyStream, subjects.threadHistory(thread), { purge }),
  );
  await tools.retry("erase the message id index", () =>
    eraseIdIndex(jsm, buckets.names.ids, thread, purge),
  );
  // Always one purge, on nats-server < 2.10 too: the bug that makes CHAT and HISTORY delete one
  // by one (erase.ts) sends consumers covering the subject to the stream's end, and outline keeps
  // none on DEAD (`outline dead` reads with a short-lived one that at worst ends its listing
  // early). Letters of the shared subject of older versions are not reached: not erased.
  const dead = subjects.deadLetterOf(thread);
  await tools.retry("erase the thread's dead letters", async () => {
    const below = await lettersAfterDelete(
      jsm,
      names.deadStream,
      dead,
      names.chatStream,
      deletedAt,
    );
    return eraseSubject(jsm, names.deadStream, dead, {
      purge: true,
      ...(below === undefined ? {} : { below }),
    });
  });
  await tools.retry("erase the snapshot", () =>
    eraseSubject(jsm, kvStream(names.kvBucket), kvSubject(names.kvBucket, thread), { purge }),
  );
}
