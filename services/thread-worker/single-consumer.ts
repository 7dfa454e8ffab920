import {
  AckPolicy,
  DeliverPolicy,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { notFound } from "./partitions.ts";

/** The worker's consumer is ours to shape only when we create it; an existing one is checked. */
async function ensureConsumer(
  jsm: JetStreamManager,
  names: InfraNames,
  ackWaitMs: number,
  maxAckPending: number,
): Promise<void> {
  try {
    const info = await jsm.consumers.info(names.chatStream, names.workerDurable);
    const problems: string[] = [];
    if (info.config.ack_policy !== AckPolicy.Explicit)
      problems.push(`ack_policy is ${info.config.ack_policy}, not explicit`);
    if (info.config.filter_subject)
      problems.push(`it filters on ${info.config.filter_subject}, so it misses other chat events`);
    if (info.config.deliver_subject) problems.push("it is a push consumer, the worker pulls");
    if (problems.length > 0) {
      throw new Error(
        `consumer ${names.workerDurable} on stream ${names.chatStream} cannot serve the thread worker: ${problems.join("; ")}. ` +
          `Delete it ('nats consumer rm ${names.chatStream} ${names.workerDurable}') so the worker creates it, or set OUTLINE_WORKER_DURABLE to another name`,
      );
    }
    return;
  } catch (err) {
    if (!notFound(err)) throw err;
  }
  await jsm.consumers.add(names.chatStream, {
    durable_name: names.workerDurable,
    description: "outline thread workers: every chat event, acknowledged once its effect is stored",
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ackWaitMs),
    max_ack_pending: maxAckPending,
    max_deliver: -1,
  });
}

/**
 * Single mode: one durable for every chat event, created or checked, and consumed. `ackLimit`
 * is the consumer's own max_ack_pending (one that existed before may have another than ours).
 */
export async function consumeSingle(
  js: JetStreamClient,
  jsm: JetStreamManager,
  names: InfraNames,
  ackWaitMs: number,
  maxAckPending: number,
): Promise<{ messages: ConsumerMessages; ackLimit: number }> {
  await ensureConsumer(jsm, names, ackWaitMs, maxAckPending);
  const consumer = await js.consumers.get(names.chatStream, names.workerDurable);
  const ackLimit = (await consumer.info(true)).config.max_ack_pending ?? maxAckPending;
  const messages = await consumer.consume({ max_messages: Math.min(1_000, maxAckPending) });
  return { messages, ackLimit };
}
