import {
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from "@nats-io/jetstream";
import {
  createInbox,
  nanos,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { deliveryOf } from "./ack-reply.ts";
import { addConsumerOnLeader } from "./leader-consumer.ts";

/** A message as stored in its stream. */
export interface RawMessage {
  subject: string;
  seq: number;
  data: Uint8Array;
}

export interface OrderedReadOptions {
  /** One subject filter (nats-server 2.9 takes one per consumer). */
  filter?: string;
  /** Messages asked for per pull; two pulls' worth are kept in flight ahead of the reader. */
  batch?: number;
  /**
   * Bytes a pull may bring at most (so at most twice this is in flight: big messages cannot
   * pile up past the server's limit for a slow client, which would cut the connection). A
   * message bigger than this alone is fetched by a pull of its own.
   */
  maxBytes?: number;
  /** Nothing delivered this long while the reader waits: what was counted at the start is gone. */
  idleMs?: number;
  /**
   * A pause of onEvent longer than this (a model call of `--resummarize`) resumes on a fresh
   * consumer: the old may have expired meanwhile (its inactivity limit is twice this).
   */
  freshAfterPauseMs?: number;
}

/** The read could not go on (its consumer could not be made, the connection closed). */
export class OrderedReadError extends Error {
  override readonly name = "OrderedReadError";
  readonly code = "ORDERED_READ_FAILED";
}

/** A consumer unused this long is removed by the server (a crashed reader leaves nothing). */
const INACTIVE_MS = 5 * 60_000;
/** Bytes a pull may bring by default: 16 MiB, so at most 32 MiB in flight. */
const DEFAULT_MAX_BYTES = 16 * 2 ** 20;
/** A pull for the next message alone, whatever its size (it is bigger than maxBytes). */
const ONE_WHATEVER_ITS_SIZE = JSON.stringify({ batch: 1 });
/** The header of a pull's end saying how many of its messages it did not bring. */
const PENDING_MESSAGES = "Nats-Pending-Messages";
/** A read that keeps losing its consumer (the stream deleted under it) gives up after this many. */
const MAX_RESTARTS = 10;

interface Queued {
  message: RawMessage;
  /** Messages the consumer still held after this one (0: the end of what is stored). */
  pending: number;
}

/**
 * Reads a stream (or the part a filter selects) once, in order, from the start: `onStart` learns
 * how many messages there are, `onEvent` sees each, one at a time (a returned promise is awaited
 * before the next). Stops at the end of what was stored when it started (messages published
 * meanwhile may be included, never waited for).
 *
 * What nats.js's ordered consumer does, without what a replay pays per message and never uses: an
 * async iterator, a JsMsg with its reply subject split into a dozen fields, heartbeat timers.
 * Here a pull consumer with no acks feeds one callback on an inbox of ours; the reply subject is
 * read from its end (stream sequence, delivery sequence, pending). A gap in the delivery
 * sequence, or a pause long enough for the consumer to expire, starts a fresh consumer after the
 * last stream sequence delivered, as the ordered consumer does. On a cluster each consumer is
 * kept only on the stream's leader (leader-consumer.ts).
 */
export function readInOrder(
  nc: NatsConnection,
  jsm: JetStreamManager,
  stream: string,
  options: OrderedReadOptions,
  onStart: (total: number) => void,
  onEvent: (message: RawMessage) => Promise<void> | void,
): Promise<void> {
  return new OrderedRead(nc, jsm, stream, options, onStart, onEvent).done;
}

class OrderedRead {
  readonly done: Promise<void>;
  #resolve!: () => void;
  #reject!: (err: Error) => void;
  readonly #batch: number;
  readonly #pullBody: string;
  readonly #idleMs: number;
  /** The last pull brought nothing: the next message is bigger than maxBytes alone. */
  #nextIsBig = false;
  readonly #sub: Subscription;
  readonly #inbox = createInbox();
  /** Pulls of each consumer ask for replies on an inbox of their own (a status names it). */
  #generation = 0;
  #reply = "";
  /** The consumer now read; messages naming another (one replaced) are dropped. */
  #consumer: string | undefined;
  #nextSubject = "";
  /** Delivery sequence of the last message taken from #consumer. */
  #delivered = 0;
  /** Stream sequence of the last message taken, from any consumer. */
  #lastSeq = 0;
  /** Messages asked for (over every consumer) and handed to onEvent. */
  #requested = 0;
  #handled = 0;
  /** Delivered while onEvent's promise was pending. */
  readonly #queue: Queued[] = [];
  #busySince: number | undefined;
  #endSeen = false;
  #finished = false;
  #started = false;
  #idle: NodeJS.Timeout | undefined;
  /** Messages received (from any consumer), and at the last idle check. */
  #received = 0;
  #receivedAtTick = -1;
  #checking = false;
  /** Fresh consumers made since a message was last taken in order. */
  #restarts = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly options: OrderedReadOptions,
    private readonly onStart: (total: number) => void,
    private readonly onEvent: (message: RawMessage) => Promise<void> | void,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#batch = options.batch ?? 2_000;
    this.#pullBody = JSON.stringify({
      batch: this.#batch,
      max_bytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    });
    this.#idleMs = options.idleMs ?? 2_000;
    this.#sub = nc.subscribe(`${this.#inbox}.*`, {
      callback: (err, msg) => {
        if (err) this.#fail(err, "the subscription for its messages failed");
        else this.#receive(msg);
      },
    });
    void this.#open(0);
  }

  /** Makes a consumer from `fromSeq` on (0: the start) and asks for the first two batches. */
  async #open(fromSeq: number): Promise<void> {
    const old = this.#consumer;
    this.#consumer = undefined;
    if (fromSeq > 0 && ++this.#restarts > MAX_RESTARTS) {
      this.#fail(
        new Error(`${MAX_RESTARTS} fresh consumers in a row lost messages or were deleted`),
        "it cannot keep a consumer",
      );
      return;
    }
    if (old !== undefined) void this.jsm.consumers.delete(this.stream, old).catch(() => false);
    try {
      const info = await addConsumerOnLeader(this.jsm, this.stream, {
        ...(fromSeq > 0
          ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }
          : { deliver_policy: DeliverPolicy.All }),
        ...(this.options.filter === undefined ? {} : { filter_subject: this.options.filter }),
        inactive_threshold: nanos(INACTIVE_MS),
      });
      if (this.#finished) {
        void this.jsm.consumers.delete(this.stream, info.name).catch(() => false);
        return;
      }
      if (!this.#started) {
        this.#started = true;
        this.onStart(info.num_pending);
        this.#idle = setInterval(() => this.#checkIdle(), this.#idleMs);
      }
      this.#consumer = info.name;
      this.#reply = `${this.#inbox}.${++this.#generation}`;
      this.#nextSubject = `$JS.API.CONSUMER.MSG.NEXT.${this.stream}.${info.name}`;
      this.#delivered = 0;
      this.#requested = this.#handled + this.#queue.length;
      if (info.num_pending === 0) {
        this.#endSeen = true;
        this.#settle();
        return;
      }
      this.#pull();
    } catch (err) {
      this.#fail(err, `could not make a consumer on stream ${this.stream}`);
    }
  }

  /** Keeps between one and two batches asked for ahead of what onEvent has taken. */
  #pull(): void {
    if (this.#consumer !== undefined && this.#nextIsBig) {
      this.#nextIsBig = false;
      this.nc.publish(this.#nextSubject, ONE_WHATEVER_ITS_SIZE, { reply: this.#reply });
      this.#requested += 1;
    }
    while (this.#consumer !== undefined && this.#requested - this.#handled < this.#batch) {
      this.nc.publish(this.#nextSubject, this.#pullBody, { reply: this.#reply });
      this.#requested += this.#batch;
    }
  }

  /**
   * A status on the inbox of the current consumer's pulls. 100 (heartbeat) and 404/408 (a pull
   * ended empty) need nothing. A 409 for bytes ends a pull short: what it did not bring is asked
   * again (by a pull of its own for a message bigger than maxBytes). Any other 409 says the
   * consumer is gone (deleted, a leader change) or refused a pull: a fresh consumer takes over.
   */
  #status(headers: MsgHdrs | undefined): void {
    if (headers?.code !== 409) return;
    if (!/message size exceeds/i.test(headers.description)) {
      void this.#open(this.#lastSeq + 1);
      return;
    }
    const left = Number(headers.get(PENDING_MESSAGES));
    if (Number.isInteger(left) && left > 0) {
      if (left >= this.#batch) this.#nextIsBig = true;
      this.#requested -= left;
    } else {
      // An older server that does not say: ask again as if nothing else were in flight.
      this.#requested = this.#handled + this.#queue.length;
    }
    if (this.#busySince === undefined) this.#pull();
  }

  #receive(msg: Msg): void {
    if (this.#finished || this.#consumer === undefined) return;
    const reply = msg.reply;
    if (!reply) {
      // A status, on the inbox of the pull it answers (one of a replaced consumer: ignored).
      if (msg.subject === this.#reply) this.#status(msg.headers);
      return;
    }
    const info = deliveryOf(reply, this.#consumer);
    if (!info) return; // from a consumer replaced since
    if (info.dseq !== this.#delivered + 1) {
      // A message was lost on the way: start again after the last one taken.
      void this.#open(this.#lastSeq + 1);
      return;
    }
    this.#restarts = 0;
    this.#received += 1;
    this.#delivered = info.dseq;
    this.#lastSeq = info.sseq;
    const message = { subject: msg.subject, seq: info.sseq, data: msg.data };
    if (this.#busySince !== undefined || this.#queue.length > 0) {
      this.#queue.push({ message, pending: info.pending });
    } else {
      this.#hand(message, info.pending);
    }
  }

  /** Hands one message to onEvent; a promise pauses the read until it settles. */
  #hand(message: RawMessage, pending: number): void {
    if (pending === 0) this.#endSeen = true;
    let applied: Promise<void> | void;
    try {
      applied = this.onEvent(message);
    } catch (err) {
      this.#fail(err);
      return;
    }
    this.#handled += 1;
    if (applied) {
      this.#busySince = Date.now();
      applied.then(
        () => this.#resume(),
        (err: unknown) => this.#fail(err),
      );
      return;
    }
    if (this.#endSeen) this.#settle();
    else this.#pull();
  }

  #resume(): void {
    const pausedFor = Date.now() - (this.#busySince ?? Date.now());
    this.#busySince = undefined;
    if (this.#finished) return;
    if (pausedFor > (this.options.freshAfterPauseMs ?? INACTIVE_MS / 2) && !this.#endSeen) {
      // The consumer may have expired meanwhile: what is queued is kept, the rest asked anew.
      const fresh = this.#open(this.#lastSeq + 1);
      this.#drain();
      void fresh;
      return;
    }
    this.#drain();
  }

  #drain(): void {
    while (this.#busySince === undefined && !this.#finished) {
      const next = this.#queue.shift();
      if (!next) break;
      this.#hand(next.message, next.pending);
    }
    if (this.#busySince === undefined && !this.#finished) {
      if (this.#endSeen) this.#settle();
      else this.#pull();
    }
  }

  /** Done once the end was seen and everything before it handed over. */
  #settle(): void {
    if (this.#finished || !this.#endSeen) return;
    if (this.#busySince !== undefined || this.#queue.length > 0) return;
    this.#finish();
    this.#resolve();
  }

  #checkIdle(): void {
    if (this.#finished || this.#busySince !== undefined || this.#checking) return;
    if (this.#received === this.#receivedAtTick && this.#consumer !== undefined) {
      this.#checking = true;
      void this.#askWhyIdle(this.#consumer).finally(() => (this.#checking = false));
    }
    this.#receivedAtTick = this.#received;
  }

  /**
   * Nothing came for a whole interval while more was due. The consumer says why: nothing left
   * (the rest was purged since it was counted: done), gone (deleted, or expired: a fresh one),
   * or messages still waiting (a pull was lost: asked again).
   */
  async #askWhyIdle(consumer: string): Promise<void> {
    let pending: number;
    try {
      pending = (await this.jsm.consumers.info(this.stream, consumer)).num_pending;
    } catch (err) {
      if (this.#finished || this.#consumer !== consumer) return;
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound) {
        await this.#open(this.#lastSeq + 1);
      } else {
        this.#fail(err, "no message came, and asking its consumer why failed");
      }
      return;
    }
    if (this.#finished || this.#consumer !== consumer || this.#received !== this.#receivedAtTick) {
      return;
    }
    if (pending === 0) {
      this.#endSeen = true;
      this.#settle();
      return;
    }
    this.#requested = this.#handled + this.#queue.length;
    this.#pull();
  }

  #fail(err: unknown, what?: string): void {
    if (this.#finished) return;
    this.#finish();
    if (what === undefined && err instanceof Error) {
      this.#reject(err);
      return;
    }
    const cause = err instanceof Error ? err : new Error(String(err));
    this.#reject(
      new OrderedReadError(
        `reading stream ${this.stream} in order: ${what ?? "failed"}: ${cause.message}; check that nats-server is up with JetStream and the stream exists, then rerun`,
        { cause },
      ),
    );
  }

  #finish(): void {
    this.#finished = true;
    if (this.#idle) clearInterval(this.#idle);
    this.#sub.unsubscribe();
    // Ephemeral consumers expire anyway; deleting now frees the server early.
    if (this.#consumer !== undefined) {
      void this.jsm.consumers.delete(this.stream, this.#consumer).catch(() => false);
    }
    this.#consumer = undefined;
  }
}
