import {
  jetstream,
  DeliverPolicy,
  type ConsumerInfo,
  type JetStreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { addConsumerOnLeader } from "./leader-consumer.ts";
import { ApiError } from "../api/api-error.ts";

/** What a failed read of NATS answers: a 503 that names what was read. */
export function storeError(what: string, err: unknown): ApiError {
  return new ApiError(
    503,
    "NATS_READ_FAILED",
    `reading ${what} from NATS failed: ${(err as Error).message}; check that NATS is up (GET /healthz) and retry`,
  );
}

/** A stored message as a consumer delivered it, not yet decoded. */
export interface ConsumedMessage {
  subject: string;
  seq: number;
  data: Uint8Array;
}

/**
 * The thread's messages stored from `next` up to `untilSeq`, for the `messagesAfter` of reader.ts
 * that read `read` of at most `max` by direct get and has more: one consumer per stored form for
 * the rest, from where the direct gets stopped (nats-server 2.9 takes one filter per consumer),
 * merged by sequence.
 */
export async function consumeRest(
  nc: NatsConnection,
  manager: () => Promise<JetStreamManager>,
  stream: string,
  forms: readonly string[],
  next: number,
  untilSeq: number,
  max: number,
  read: number,
  fetchExpiresMs: number | undefined,
  what: string,
): Promise<ConsumedMessage[]> {
  const rest: ConsumedMessage[] = [];
  for (const subject of forms) {
    let placed: ConsumerInfo;
    try {
      // On the stream's leader (a replica being caught up would lack the newest); a failure
      // is not waited out: the request answers 503 at once, as before.
      placed = await addConsumerOnLeader(
        await manager(),
        stream,
        {
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: next,
          filter_subject: subject,
        },
        0,
      );
    } catch (err) {
      throw storeError(what, err);
    }
    const consumer = jetstream(nc).consumers.getConsumerFromInfo(placed);
    try {
      // A form with nothing from here on answers no fetch: not waited for.
      if (forms.length > 1 && placed.num_pending === 0) continue;
      let from = next;
      let kept = 0;
      while (from <= untilSeq) {
        const batch = await consumer.fetch({
          max_messages: Math.min(256, max + 1 - read - kept),
          expires: fetchExpiresMs ?? 2_000,
        });
        let got = 0;
        for await (const m of batch) {
          got += 1;
          if (m.seq > untilSeq) {
            from = m.seq;
            break;
          }
          rest.push({ subject: m.subject, seq: m.seq, data: m.data });
          kept += 1;
          from = m.seq + 1;
          // The last of this form (the other form holds the rest): no wait for more.
          if (m.seq === untilSeq || m.info.pending === 0) {
            from = untilSeq + 1;
            break;
          }
        }
        // Nothing came although the newest message is further on: it was purged meanwhile.
        if (got === 0 || read + kept > max) break;
      }
    } catch (err) {
      throw storeError(what, err);
    } finally {
      // Ephemeral, it expires anyway; deleting now frees the server early.
      await consumer.delete().catch(() => undefined);
    }
  }
  if (forms.length > 1) rest.sort((a, b) => a.seq - b.seq);
  return rest;
}
