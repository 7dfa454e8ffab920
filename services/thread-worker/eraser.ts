import { eraseSubject } from "../nats/erase.ts";
import { kvStream, kvSubject } from "./buckets.ts";
import { eraseIdIndex } from "./id-index.ts";
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
 * Erases everything of a deleted thread, its tombstone saved already: CHAT up to the delete,
 * HISTORY, the id index, its dead letters and the snapshot, in that order. CHAT first and the snapshot last: the
 * API answers 404 once a thread has neither, so while the erase runs (one delete per message on
 * servers before 2.10) it can fail a request for the thread, but never serve its messages as a
 * thread without a snapshot.
 */
export async function eraseThread(tools: SlotTools, seen: number): Promise<void> {
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
  await tools.retry("erase the thread's dead letters", () =>
    eraseSubject(jsm, names.deadStream, subjects.deadLetterOf(thread), { purge: true }),
  );
  await tools.retry("erase the snapshot", () =>
    eraseSubject(jsm, kvStream(names.kvBucket), kvSubject(names.kvBucket, thread), { purge }),
  );
}
