import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import type { InfraNames } from "../config/names.ts";
import { subjects } from "../nats/subjects.ts";
import { decodeChatEvent, type DecodedEvent } from "../nats/decode.ts";

/** A tail message could not be read back from CHAT; says which one and what to do. */
export class ChatReadError extends Error {
  override readonly name = "ChatReadError";
  readonly code = "CHAT_MESSAGE_MISSING";
}

export interface StoredChatEvent {
  seq: number;
  subject: string;
  data: Uint8Array;
  thread: string | undefined;
  event: DecodedEvent;
}

function toEvent(names: InfraNames, stored: StoredMsg): StoredChatEvent {
  const decoded = decodeChatEvent(subjects(names), stored.subject, stored.data);
  return { seq: stored.seq, subject: stored.subject, data: stored.data, ...decoded };
}

/**
 * Reads one CHAT event by stream sequence (one direct get), decoded and validated; undefined when
 * the sequence holds nothing (purged, deleted or not written yet). This is how a thread's tail is
 * read: the KV snapshot lists `tailSeqs`, and each is one read.
 */
export async function readChatEvent(
  jsm: JetStreamManager,
  names: InfraNames,
  seq: number,
  /** Through the stream's leader: slower, but never behind the last write (a direct get may be). */
  fromLeader = false,
): Promise<StoredChatEvent | undefined> {
  const stored = fromLeader
    ? await jsm.streams.getMessage(names.chatStream, { seq })
    : await jsm.direct.getMessage(names.chatStream, { seq });
  return stored ? toEvent(names, stored) : undefined;
}

/**
 * The first event of `thread` (message.created or thread.deleted) at or after `fromSeq`, or
 * undefined when there is none. Two direct gets at once, one per event subject: a literal subject
 * is found through the server's per-subject index, while a wildcard (`chat.<thread>.>`) makes
 * nats-server 2.9 scan every message from `fromSeq` when the thread has none there (16 ms per
 * read on a 60,000-message stream; a restarted worker reads this for each new thread). These two
 * are a thread's only events (the router dead-letters any other subject, worker.ts), each under
 * one subject, or two in partitioned mode.
 */
export async function nextThreadEvent(
  jsm: JetStreamManager,
  names: InfraNames,
  thread: string,
  fromSeq: number,
): Promise<StoredChatEvent | undefined> {
  const s = subjects(names);
  const seq = Math.max(1, fromSeq);
  // Partitioned, each kind has two stored forms (docs/scale-out.md): one get per form.
  const found = await Promise.all(
    [...s.stored(thread, "message.created"), ...s.stored(thread, "thread.deleted")].map((subject) =>
      jsm.direct.getMessage(names.chatStream, { next_by_subj: subject, seq }),
    ),
  );
  let first: StoredMsg | null = null;
  for (const m of found) if (m && (!first || m.seq < first.seq)) first = m;
  return first ? toEvent(names, first) : undefined;
}

/**
 * Reads messages back by CHAT sequence, in parallel, checking that each is the message expected
 * (same id). Used to rehydrate a persisted actor whose tail texts were stripped; the prompt-builder
 * can use it the same way for a snapshot's `tail` + `tailSeqs`.
 */
export async function readTailMessages(
  jsm: JetStreamManager,
  names: InfraNames,
  wanted: readonly { id: string; seq: number }[],
): Promise<Map<number, StoredChatEvent & { event: { kind: "message" } }>> {
  const read = await Promise.all(
    wanted.map(async ({ id, seq }) => {
      if (!Number.isSafeInteger(seq) || seq <= 0) {
        throw new ChatReadError(
          `message '${id}' has no CHAT sequence (${seq}); only messages read from stream ${names.chatStream} can be read back`,
        );
      }
      const isIt = (e: StoredChatEvent | undefined) =>
        e?.event.kind === "message" && e.event.message.id === id;
      let found = await readChatEvent(jsm, names, seq);
      // A direct get may be answered by a replica that has not stored it yet (a message applied
      // by the thread's last owner just before it handed the thread over): the leader says.
      if (!isIt(found)) found = await readChatEvent(jsm, names, seq, true);
      if (found?.event.kind !== "message" || found.event.message.id !== id) {
        throw new ChatReadError(
          `message '${id}' is not at sequence ${seq} of stream ${names.chatStream} (${found ? `found ${found.subject}` : "nothing there"}): ` +
            `the stream was purged or recreated. Delete the thread's key from the actor bucket to rebuild it from what the stream still holds.`,
        );
      }
      return [seq, found as StoredChatEvent & { event: { kind: "message" } }] as const;
    }),
  );
  return new Map(read);
}
