import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import type { Subjects } from "../nats/subjects.ts";
import { Turns } from "./turns.ts";

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
 * A partition's two durable names. Each new reader creates the one not in use at the ack floor
 * of the other, then deletes the other off the critical path: one Raft operation between taking
 * the lease and pulling, not a delete and a create in a row.
 */
export const partitionDurables = (names: InfraNames, k: number): [string, string] => {
  const base = partitionDurable(names, k);
  return [base, `${base}-b`];
};

/** A partition's consumers as found (undefined: no such consumer), in `partitionDurables` order. */
type Found = (ConsumerInfo | undefined)[];

/** Reads both of partition `k`'s consumers: two info requests at once (a read, no Raft write). */
function findConsumers(jsm: JetStreamManager, names: InfraNames, k: number): Promise<Found> {
  return Promise.all(
    partitionDurables(names, k).map((name) =>
      jsm.consumers.info(names.chatStream, name).catch((err: unknown) => {
        if (notFound(err)) return undefined;
        throw err;
      }),
    ),
  );
}

/**
 * Creates a partition's consumer at its ack floor, so events its last reader was given and did
 * not acknowledge come again at once, not after the ack wait; those above the floor already
 * applied are skipped by the thread's `seen`. Every event at or below either consumer's ack
 * floor was saved before it was acknowledged, so the higher floor is where to start. The
 * unpartitioned one starts where the single-mode durable had got to (an upgrade), or at the
 * stream's start. Returns the new consumer's info (no second request for it: on a cluster each
 * is a round to the consumer's new leader) and the name of the one to delete.
 */
async function openConsumer(
  jsm: JetStreamManager,
  names: InfraNames,
  s: Subjects,
  k: number,
  found: Found,
  options: { ackWaitMs: number; maxAckPending: number },
): Promise<{ info: ConsumerInfo; stale: string | undefined }> {
  const [a, b] = partitionDurables(names, k);
  const [infoA, infoB] = found;
  const floors = [infoA, infoB].flatMap((i) => (i ? [i.ack_floor.stream_seq] : []));
  let floor = floors.length > 0 ? Math.max(...floors) : undefined;
  if (floor === undefined && k === UNPARTITIONED) {
    try {
      floor = (await jsm.consumers.info(names.chatStream, names.workerDurable)).ack_floor
        .stream_seq;
    } catch (err) {
      if (!notFound(err)) throw err;
    }
  }
  let name = infoA ? b : a;
  if (infoA && infoB) {
    // Both there (a delete left undone by a reader that died): the one behind goes first.
    name = infoA.ack_floor.stream_seq <= infoB.ack_floor.stream_seq ? a : b;
    await jsm.consumers.delete(names.chatStream, name).catch((err: unknown) => {
      if (!notFound(err)) throw err;
    });
  }
  const other = name === a ? b : a;
  const info = await jsm.consumers.add(names.chatStream, {
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
    ack_wait: nanos(options.ackWaitMs),
    max_ack_pending: options.maxAckPending,
    max_deliver: -1,
  });
  return { info, stale: (name === a ? infoB : infoA) ? other : undefined };
}

/** Consumers read ahead of an open for this long are still trusted (a lease write's time). */
const FOUND_FRESH_MS = 10_000;

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
  /** When it last delivered (or was opened). */
  at: number;
  /** Its pull loop ended without a close, or its consumer is gone. */
  ended: boolean;
  /** Events not yet delivered, and delivered not yet acknowledged, as of the last `lag()`. */
  pending: number;
  ackPending: number;
}

/**
 * How long a consumer with events pending (and room under max_ack_pending) may deliver none
 * before it is taken for stuck, or the ack wait if that is shorter. A healthy one delivers
 * within a pull; waiting a whole ack wait (30 s by default) kept a partition idle 21-28 s after
 * a server restart in the cluster test's case (c).
 */
export const STALL_MS = 10_000;

/** What `stalled` reads of a partition's reading. */
export type ReadingState = Pick<Reading, "at" | "ended" | "pending" | "ackPending">;

/**
 * Whether a reading stopped delivering: its pull loop ended without a close, or it had events
 * pending at the last `lag()`, fewer than `maxAckPending` unacknowledged (the server holds back
 * at it), and delivered none for STALL_MS (or `ackWaitMs`, when shorter).
 */
export function isStalled(
  r: ReadingState,
  now: number,
  ackWaitMs: number,
  maxAckPending: number,
): boolean {
  if (r.ended) return true;
  return (
    r.pending > 0 && r.ackPending < maxAckPending && now - r.at > Math.min(ackWaitMs, STALL_MS)
  );
}

/**
 * The consumers of the partitions this worker holds, one pull loop each, every delivery handed
 * to `route`. Opened and closed as the membership takes and gives partitions.
 */
export class PartitionConsumers {
  readonly #reading = new Map<number, Reading>();
  /** Each partition's opens, closes and re-creations, one after the other. */
  readonly #ops = new Map<number, Promise<void>>();
  readonly #recreating = new Set<number>();
  /** Every pull loop's routing, paced together (turns.ts). */
  readonly #turns = new Turns();
  /** Consumers read ahead (`prepare`), for the next open of the partition. */
  readonly #found = new Map<number, { at: number; found: Promise<Found> }>();
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

  /** Runs `op` on partition `k` after the ones before it: a close never overtakes a re-creation. */
  #serial(k: number, op: () => Promise<void>): Promise<void> {
    const run = (this.#ops.get(k) ?? Promise.resolve()).then(op);
    this.#ops.set(
      k,
      run.catch(() => undefined),
    );
    return run;
  }

  /**
   * Reads partition `k`'s consumers ahead of opening it: called while its lease is written, so
   * the open that follows only creates.
   */
  prepare(k: number): void {
    const found = findConsumers(this.#jsm, this.#names, k);
    found.catch(() => undefined);
    this.#found.set(k, { at: Date.now(), found });
  }

  open(k: number): Promise<void> {
    return this.#serial(k, () => this.#open(k));
  }

  async #open(k: number): Promise<void> {
    if (this.#reading.has(k)) return;
    const { route, failed } = this.#options;
    const ahead = this.#found.get(k);
    this.#found.delete(k);
    const found =
      ahead && Date.now() - ahead.at < FOUND_FRESH_MS
        ? await ahead.found
        : await findConsumers(this.#jsm, this.#names, k);
    const { info, stale } = await openConsumer(
      this.#jsm,
      this.#names,
      this.#s,
      k,
      found,
      this.#options,
    );
    const name = info.name;
    const consumer = this.#js.consumers.getConsumerFromInfo(info);
    const messages = await consumer.consume({
      max_messages: Math.min(256, this.#options.maxAckPending),
    });
    const reading: Reading = {
      name,
      messages,
      pulling: Promise.resolve(),
      at: Date.now(),
      ended: false,
      pending: 0,
      ackPending: 0,
    };
    reading.pulling = (async () => {
      for await (const msg of messages) {
        reading.at = Date.now();
        route(msg);
        const turn = this.#turns.pace();
        if (turn) await turn;
      }
    })()
      .catch((err: unknown) => failed(k, err))
      .finally(() => (reading.ended = true));
    this.#reading.set(k, reading);
    // After the pulling began, before any later close or re-creation of `k` (so a successor's
    // consumer of that name is never the one deleted). A failure leaves both; the next open
    // deletes the one behind.
    if (stale)
      void this.#serial(k, () =>
        this.#jsm.consumers.delete(this.#names.chatStream, stale).then(
          () => undefined,
          () => undefined,
        ),
      );
  }

  /** Stops pulling `k`; resolves once every delivery already here has been routed. */
  close(k: number): Promise<void> {
    return this.#serial(k, () => this.#close(k));
  }

  async #close(k: number): Promise<void> {
    const reading = this.#reading.get(k);
    if (!reading) return;
    this.#reading.delete(k);
    // A loop that ended on an error has closed already.
    await reading.messages.close().catch(() => undefined);
    await reading.pulling;
    this.#options.forget(reading.name);
  }

  /**
   * Partitions held whose consumer stopped delivering (`isStalled`). A consumer can stall so on
   * a cluster (nats-server 2.9.10 logged "consumer … has NO quorum, stalled" for minutes after a
   * server restart); re-created, it delivers again.
   */
  stalled(ackWaitMs: number, now = Date.now()): number[] {
    const out: number[] = [];
    for (const [k, r] of this.#reading)
      if (isStalled(r, now, ackWaitMs, this.#options.maxAckPending)) out.push(k);
    return out;
  }

  /**
   * Re-creates `k`'s consumer at its ack floor, if `k` is still held by then; `retry` repeats the
   * opening until it works (a close of `k` waits for it).
   */
  recreate(k: number, retry: (open: () => Promise<void>) => Promise<void>): Promise<void> {
    if (this.#recreating.has(k)) return Promise.resolve();
    this.#recreating.add(k);
    return this.#serial(k, async () => {
      if (!this.#reading.has(k)) return;
      await this.#close(k);
      await retry(() => this.#open(k));
    }).finally(() => this.#recreating.delete(k));
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
      [...this.#reading.values()].map(async (reading) => {
        const info = await this.#jsm.consumers
          .info(this.#names.chatStream, reading.name)
          .catch((err: unknown) => {
            // Gone (deleted by hand, say): nothing delivers any more.
            if (notFound(err)) reading.ended = true;
            throw err;
          });
        reading.pending = info.num_pending;
        reading.ackPending = info.num_ack_pending;
        pending += info.num_pending;
        ackPending += info.num_ack_pending;
      }),
    );
    return { pending, ackPending };
  }
}
