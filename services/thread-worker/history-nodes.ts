import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { summaryEventSchema, type SummaryEvent } from "../../shared/history.ts";
import type { InfraNames } from "../config/names.ts";
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
}

const encoder = new TextEncoder();

function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
}

export function historyNodes(
  js: JetStreamClient,
  jsm: JetStreamManager,
  names: InfraNames,
  s: Subjects,
): HistoryNodes {
  const read = async (thread: string, level: number, index: number) => {
    const stored = await jsm.direct.getMessage(names.historyStream, {
      last_by_subj: s.historyNode(thread, level, index),
    });
    if (!stored) return undefined;
    let body: unknown;
    try {
      body = stored.json();
    } catch {
      return undefined;
    }
    const parsed = summaryEventSchema.safeParse(body);
    // Something else on a node subject is not ours to trust: the node is rebuilt (and its
    // publish then fails on the expected sequence, which the caller sees as a clear error).
    return parsed.success ? parsed.data : undefined;
  };
  return {
    read,
    async publish(event) {
      const subject = s.historyNode(event.thread, event.level, event.index);
      try {
        // Msg-Id de-duplicates a retry inside the window; the expected last subject sequence 0
        // makes "a node is built once" hold beyond it, and fences a second writer.
        await js.publish(subject, encoder.encode(JSON.stringify(event)), {
          msgID: s.historyMsgId(event.thread, event.level, event.index),
          expect: { lastSubjectSequence: 0 },
        });
        return event;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        const stored = await read(event.thread, event.level, event.index);
        if (stored) return stored;
        throw new Error(
          `${subject} holds a message that is not a summary node (it does not match shared/history.ts); remove it with 'nats stream purge ${names.historyStream} --subject ${subject}' so the node can be published`,
          { cause: err },
        );
      }
    },
  };
}
