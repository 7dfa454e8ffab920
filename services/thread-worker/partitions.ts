import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import type { Subjects } from "../nats/subjects.ts";

/** The stand-in partition for events stored before the mapping (read with partition 0). */
export const UNPARTITIONED = -1;

/** Partition `k`'s durable consumer, or the one for events stored without a token. */
export const partitionDurable = (names: InfraNames, k: number): string =>
  k === UNPARTITIONED ? `${names.workerDurable}-unpartitioned` : `${names.workerDurable}-p${k}`;

/** The consumer asked for does not exist. */
export function notFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/**
 * (Re)creates a partition's consumer at its ack floor, so events its last reader was given and
 * did not acknowledge come again at once, not after the ack wait; those above the floor already
 * applied are skipped by the thread's `seen`. The unpartitioned one starts where the single-mode
 * durable had got to (an upgrade), or at the stream's start.
 */
async function openConsumer(
  jsm: JetStreamManager,
  names: InfraNames,
  s: Subjects,
  k: number,
  ackWaitMs: number,
  maxAckPending: number,
): Promise<string> {
  const name = partitionDurable(names, k);
  let floor: number | undefined;
  try {
    const info = await jsm.consumers.info(names.chatStream, name);
    floor = info.ack_floor.stream_seq;
    await jsm.consumers.delete(names.chatStream, name);
  } catch (err) {
    if (!notFound(err)) throw err;
  }
  if (floor === undefined && k === UNPARTITIONED) {
    try {
      floor = (await jsm.consumers.info(names.chatStream, names.workerDurable)).ack_floor
        .stream_seq;
    } catch (err) {
      if (!notFound(err)) throw err;
    }
  }
  await jsm.consumers.add(names.chatStream, {
    durable_name: name,
    description:
      k === UNPARTITIONED
        ? "outline thread workers: chat events stored before the partition mapping"
        : `outline thread workers: the chat events of partition ${k}`,
    filter_subject: k === UNPARTITIONED ? s.unpartitionedFilter : s.partitionFilter(k),
    ack_policy: AckPolicy.Explicit,
    ...(floor
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: floor + 1 }
      : { deliver_policy: DeliverPolicy.All }),
    ack_wait: nanos(ackWaitMs),
    max_ack_pending: maxAckPending,
    max_deliver: -1,
  });
  return name;
}

export interface PartitionConsumerOptions {
  ackWaitMs: number;
  maxAckPending: number;
  /** Every delivery, in arrival order per partition. */
  route: (msg: JsMsg) => void;
  /** A pull loop ended with an error (not by close). */
  failed: (k: number, err: unknown) => void;
  /** A consumer no longer read here (for the delivery ledger). */
  forget: (consumer: string) => void;
}

interface Reading {
  name: string;
  messages: ConsumerMessages;
  pulling: Promise<void>;
}

/**
 * The consumers of the partitions this worker holds, one pull loop each, every delivery handed
 * to `route`. Opened and closed as the membership takes and gives partitions.
 */
export class PartitionConsumers {
  readonly #reading = new Map<number, Reading>();
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #names: InfraNames;
  readonly #s: Subjects;
  readonly #options: PartitionConsumerOptions;

  constructor(
    js: JetStreamClient,
    jsm: JetStreamManager,
    names: InfraNames,
    s: Subjects,
    options: PartitionConsumerOptions,
  ) {
    this.#js = js;
    this.#jsm = jsm;
    this.#names = names;
    this.#s = s;
    this.#options = options;
  }

  /** Whether partition `k` is read here now. */
  holds(k: number): boolean {
    return this.#reading.has(k);
  }

  held(): number[] {
    return [...this.#reading.keys()].filter((k) => k !== UNPARTITIONED).sort((a, b) => a - b);
  }

  async open(k: number): Promise<void> {
    if (this.#reading.has(k)) return;
    const { ackWaitMs, maxAckPending, route, failed } = this.#options;
    const name = await openConsumer(this.#jsm, this.#names, this.#s, k, ackWaitMs, maxAckPending);
    const consumer = await this.#js.consumers.get(this.#names.chatStream, name);
    const messages = await consumer.consume({ max_messages: Math.min(256, maxAckPending) });
    const pulling = (async () => {
      for await (const msg of messages) route(msg);
    })().catch((err: unknown) => failed(k, err));
    this.#reading.set(k, { name, messages, pulling });
  }

  /** Stops pulling `k`; resolves once every delivery already here has been routed. */
  async close(k: number): Promise<void> {
    const reading = this.#reading.get(k);
    if (!reading) return;
    this.#reading.delete(k);
    await reading.messages.close();
    await reading.pulling;
    this.#options.forget(reading.name);
  }

  /** Crash simulation: stops every loop at once. */
  stopAll(): void {
    for (const reading of this.#reading.values()) reading.messages.stop();
    this.#reading.clear();
  }

  /** Events stored and not yet delivered, over the partitions held. */
  async lag(): Promise<{ pending: number; ackPending: number }> {
    let pending = 0;
    let ackPending = 0;
    await Promise.all(
      [...this.#reading.values()].map(async ({ name }) => {
        const info = await this.#jsm.consumers.info(this.#names.chatStream, name);
        pending += info.num_pending;
        ackPending += info.num_ack_pending;
      }),
    );
    return { pending, ackPending };
  }
}
