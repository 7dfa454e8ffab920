// The load the NATS benches publish: chat messages of mixed sizes spread over threads, encoded
// once so the raw baseline and our pipeline carry exactly the same bytes.
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Message } from "../../shared/events.ts";

const FILLER =
  "the deploy of billing v2 moved to Tuesday after Ana reviewed INV-2093 and the cache warmed ";
// Mostly short replies, some paragraphs, now and then a paste (bytes of text).
const SIZES = [40, 120, 300, 80, 600, 1_500, 60, 200, 900, 3_000];

export function benchMessage(thread: string, i: number): Message {
  const size = SIZES[i % SIZES.length] ?? 100;
  return {
    id: `${thread}-m${i}`,
    thread,
    at: new Date(Date.UTC(2026, 0, 1) + i * 1_000).toISOString(),
    from: i % 2 === 0 ? "Ana" : "north",
    role: i % 2 === 0 ? "user" : "assistant",
    text: `${i}: ${FILLER.repeat(Math.ceil(size / FILLER.length)).slice(0, size)}`,
  };
}

export interface Outgoing {
  subject: string;
  msgID: string;
  thread: string;
  data: Uint8Array;
}

const encoder = new TextEncoder();

/** A message of `thread` as published to `subject`, deduplicated by its id. */
export const outgoing = (subject: string, message: Message): Outgoing => ({
  subject,
  msgID: message.id,
  thread: message.thread,
  data: encoder.encode(JSON.stringify(message)),
});

/**
 * `total` messages over `threads` threads, round-robin (thread t gets messages t, t+threads, …),
 * so every thread is active at once, as on a busy platform.
 */
export function roundRobin(
  total: number,
  threads: number,
  subject: (thread: string) => string,
  threadName: (t: number) => string = (t) => `t${t}`,
  /** Where each thread's message numbering starts (a later window of the same threads). */
  first = 0,
): Outgoing[] {
  const out: Outgoing[] = [];
  for (let i = 0; i < total; i++) {
    const thread = threadName(i % threads);
    const message = benchMessage(thread, first + Math.floor(i / threads));
    out.push({
      subject: subject(thread),
      msgID: message.id,
      thread,
      data: encoder.encode(JSON.stringify(message)),
    });
  }
  return out;
}

/**
 * Publishes with up to `window` acks outstanding (a platform publishing steadily, not one at a
 * time); resolves with each message's stream sequence, in order.
 */
export async function publishAll(
  js: JetStreamClient,
  messages: readonly Outgoing[],
  window = 256,
): Promise<number[]> {
  const seqs: number[] = new Array<number>(messages.length);
  let next = 0;
  const lane = async () => {
    while (next < messages.length) {
      const i = next++;
      const m = messages[i] as Outgoing;
      seqs[i] = (await js.publish(m.subject, m.data, { msgID: m.msgID })).seq;
    }
  };
  await Promise.all(Array.from({ length: window }, lane));
  return seqs;
}

export function perSecond(count: number, ms: number): number {
  return Math.round((count / ms) * 1_000);
}
