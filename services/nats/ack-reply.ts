import { decimalIn } from "./decimal.ts";

/** Where a delivered message stands: stream and delivery sequences, and how many follow it. */
export interface Delivery {
  sseq: number;
  dseq: number;
  pending: number;
}

/**
 * Stream sequence, delivery sequence and pending of a JetStream reply subject, read from its end
 * without splitting it (once per message): `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.
 * <dseq>.<ts>.<pending>`, or the newer form with domain and account before the stream and a
 * random token after pending. Undefined when it is neither, or names another consumer.
 */
export function deliveryOf(reply: string, consumer: string): Delivery | undefined {
  if (!reply.startsWith(ACK_PREFIX)) return undefined;
  // Where each token after the prefix starts (a dot before each but the first), in an array
  // made once: this runs per message.
  const starts = TOKEN_STARTS;
  starts[0] = ACK_PREFIX.length;
  let tokens = 1;
  for (let i = ACK_PREFIX.length; i < reply.length; i++) {
    if (reply.charCodeAt(i) !== 46) continue;
    if (tokens === 10) return undefined;
    starts[tokens++] = i + 1;
  }
  // Old form: 7 tokens, the consumer second; newer form: 10, the consumer fourth.
  const first = tokens === 7 ? 1 : tokens === 10 ? 3 : -1;
  if (first < 0) return undefined;
  // No closure per message here: this runs for every delivery the worker acks.
  const end = reply.length;
  const consumerAt = starts[first] as number;
  const consumerEnd = tokenEnd(starts, tokens, first, end);
  if (consumerEnd - consumerAt !== consumer.length || !reply.startsWith(consumer, consumerAt)) {
    return undefined;
  }
  const sseq = decimalIn(
    reply,
    starts[first + 2] as number,
    tokenEnd(starts, tokens, first + 2, end),
  );
  const dseq = decimalIn(
    reply,
    starts[first + 3] as number,
    tokenEnd(starts, tokens, first + 3, end),
  );
  const pending = decimalIn(
    reply,
    starts[first + 5] as number,
    tokenEnd(starts, tokens, first + 5, end),
  );
  if (sseq === undefined || dseq === undefined || pending === undefined) return undefined;
  return { sseq, dseq, pending };
}

const TOKEN_STARTS = new Int32Array(10);

/** Where token `k` ends: before the next one's dot, or at the end of the subject. */
function tokenEnd(starts: Int32Array, tokens: number, k: number, end: number): number {
  return k + 1 < tokens ? (starts[k + 1] as number) - 1 : end;
}
const ACK_PREFIX = "$JS.ACK.";
