import {
  AckPolicy,
  DeliverPolicy,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import { clusterBucket } from "../cluster/bucket.ts";
import { clusterView } from "../cluster/view.ts";
import type { InfraNames } from "../config/names.ts";
import { isTransientAtStart, startupStep } from "../nats/startup-step.ts";
import { ApiError } from "../api/api-error.ts";
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
 * A single-mode worker reads every thread: beside live partitioned members it would fight them
 * for threads (each write fenced, each thread given up and taken back) while GET /cluster does not
 * show it. Refused at start; once they have stopped (a rollback) it starts.
 */
export async function refuseBesideMembers(
  nc: NatsConnection,
  names: InfraNames,
  failoverMs: number | undefined,
  log?: (line: string) => void,
): Promise<void> {
  // A bucket electing its leader answers nothing for a while (503 CLUSTER_UNAVAILABLE): asked
  // again, not taken for "no members".
  const read = clusterView(nc, names, failoverMs);
  const view = await startupStep(`reading bucket ${clusterBucket(names)}`, read, {
    ...(log ? { log } : {}),
    transient: (err) => isTransientAtStart(err) || (err instanceof ApiError && err.status === 503),
  });
  const live = view.members.filter((m) => m.live);
  if (live.length === 0) return;
  throw new Error(
    `OUTLINE_PARTITIONS is unset, but ${live.length} member(s) of a partitioned cluster are running on these streams (${live
      .map((m) => m.id)
      .join(
        ", ",
      )}; ${view.partitions} partitions, bucket ${clusterBucket(names)}): a worker in single mode would read their threads too. ` +
      `Set OUTLINE_PARTITIONS=${view.partitions} to join them, or stop them first (docs/scale-out.md)`,
  );
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
