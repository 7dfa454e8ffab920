import type { SettingsEvent, SummaryEvent } from "../../shared/history.ts";
import { parseSummary } from "../../shared/validate.ts";
import type { InfraNames } from "../config/names.ts";
import type { DirectReader } from "../nats/direct-reader.ts";
import { isWrongLastSequence, type KvWriter } from "../nats/kv-writer.ts";
import type { Subjects } from "../nats/subjects.ts";

/** Reads and writes summary nodes on HISTORY: one subject per node, at most one message each. */
export interface HistoryNodes {
  /** The node as stored, or undefined when it was never published (or is unreadable). */
  read(thread: string, level: number, index: number): Promise<SummaryEvent | undefined>;
  /**
   * Publishes a node unless one is stored already, and returns the node HISTORY now holds: the
   * stored one wins, so every reader (and a replay) sees one text per node.
   */
  publish(event: SummaryEvent): Promise<SummaryEvent>;
  /** Records the settings a thread runs under from CHAT sequence `event.from` on. */
  recordSettings(event: SettingsEvent): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Through the worker's own inboxes (KvWriter, DirectReader): a node is a write and a read. */
export function historyNodes(
  writer: KvWriter,
  reader: DirectReader,
  names: InfraNames,
  s: Subjects,
): HistoryNodes {
  const read = async (thread: string, level: number, index: number) => {
    const stored = await reader.lastBySubject(
      names.historyStream,
      s.historyNode(thread, level, index),
    );
    if (!stored) return undefined;
    let body: unknown;
    try {
      body = JSON.parse(decoder.decode(stored.data));
    } catch {
      return undefined;
    }
    // Something else on a node subject is not ours to trust: the node is rebuilt (and its
    // publish then fails on the expected sequence, which the caller sees as a clear error).
    return parseSummary(body);
  };
  return {
    read,
    async recordSettings(event) {
      // Msg-Id: written again after a crash before the event it precedes was saved, it is stored
      // once within the window; a second copy later says the same and is read the same.
      await writer.publish(
        s.historySettings(event.thread, event.from),
        encoder.encode(JSON.stringify(event)),
        { msgId: `${event.thread}:settings:${event.from}` },
      );
    },
    async publish(event) {
      const subject = s.historyNode(event.thread, event.level, event.index);
      let refused: unknown;
      let duplicate = false;
      try {
        // Msg-Id de-duplicates a retry inside the window; the expected last subject sequence 0
        // makes "a node is built once" hold beyond it, and fences a second writer.
        const stored = await writer.publish(subject, encoder.encode(JSON.stringify(event)), {
          expected: 0,
          msgId: s.historyMsgId(event.thread, event.level, event.index),
        });
        if (!stored.duplicate) return event;
        duplicate = true;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        refused = err;
      }
      // Stored before (by a worker that crashed after its publish, say): that text wins.
      const stored = await read(event.thread, event.level, event.index);
      if (stored) return stored;
      // Stored within the de-duplication window and gone since (the thread was erased).
      if (duplicate) return event;
      throw new Error(
        `${subject} holds a message that is not a summary node (it does not match shared/history.ts); remove it with 'nats stream purge ${names.historyStream} --subject ${subject}' so the node can be published`,
        { cause: refused },
      );
    },
  };
}
