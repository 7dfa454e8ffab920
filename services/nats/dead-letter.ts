import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { headers } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { deadLetterSubject } from "./subjects.ts";

export const DEAD_LETTER_HEADERS = {
  reason: "Outline-Reason",
  subject: "Outline-Subject",
  stream: "Outline-Stream",
  seq: "Outline-Seq",
  truncated: "Outline-Truncated",
} as const;

export interface DeadLetter {
  /** Why the event was not applied, in words a person can act on. */
  reason: string;
  /** The subject the event arrived on. */
  subject: string;
  /** The event's original bytes, unchanged, so it can be inspected or re-published. */
  data: Uint8Array;
  /** The event's sequence in its stream, when it came from one. */
  seq?: number;
  /** The stream `seq` refers to; the chat stream unless said otherwise. */
  stream?: string;
  /**
   * The server's max_payload. An event near that size no longer fits beside the headers: its
   * bytes are then cut (the whole event stays in its stream at `seq`) rather than the record
   * failing forever and holding its thread up.
   */
  maxPayload?: number;
}

// Subject, header names and framing around the values, with room to spare.
const RECORD_OVERHEAD = 1_024;

// Header values are single lines, and a reason may quote a multi-line body; a very long reason
// would also bloat every record, so it is folded and cut.
function headerValue(text: string): string {
  const folded = text.replace(/[\r\n]+/g, " ");
  return folded.length > 2000 ? `${folded.slice(0, 2000)}…` : folded;
}

/**
 * Records an event that was not applied, on its thread's dead-letter subject (`<dead>.<thread>`,
 * erased with the thread) or, when its subject names no thread, on `<dead>.unknown.thread`.
 * With a sequence the record's Nats-Msg-Id is derived from
 * it, so a redelivery of the same bad event inside the duplicate window is stored once.
 */
export async function publishDeadLetter(
  js: JetStreamClient,
  names: InfraNames,
  letter: DeadLetter,
): Promise<PubAck> {
  const h = headers();
  h.set(DEAD_LETTER_HEADERS.reason, headerValue(letter.reason));
  h.set(DEAD_LETTER_HEADERS.subject, headerValue(letter.subject));
  const stream = letter.stream ?? names.chatStream;
  if (letter.seq !== undefined) {
    h.set(DEAD_LETTER_HEADERS.stream, stream);
    h.set(DEAD_LETTER_HEADERS.seq, String(letter.seq));
  }
  let data = letter.data;
  if (letter.maxPayload !== undefined) {
    const headerBytes = [...h.keys()].reduce((n, k) => n + k.length + h.get(k).length, 0);
    const room = letter.maxPayload - RECORD_OVERHEAD - headerBytes - 256;
    if (data.length > room) {
      h.set(
        DEAD_LETTER_HEADERS.truncated,
        `${Math.max(0, room)} of ${data.length} bytes kept; the whole event is in stream ${stream}${letter.seq !== undefined ? ` at sequence ${letter.seq}` : ""}`,
      );
      data = data.subarray(0, Math.max(0, room));
    }
  }
  return js.publish(deadLetterSubject(names, letter.subject), data, {
    headers: h,
    ...(letter.seq !== undefined ? { msgID: `dead:${stream}:${letter.seq}` } : {}),
  });
}
