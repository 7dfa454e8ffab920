import type { JsMsg } from "@nats-io/jetstream";

/**
 * A stretch of consumer deliveries this worker saw without a hole. `start` is the CHAT sequence
 * of the stretch's first first-delivery (undefined until one comes): the consumer first-delivers
 * CHAT in stream order, so every CHAT event from `start` on that the consumer delivered within
 * the stretch reached this worker and was routed to its thread's slot.
 */
export interface DeliveryEpoch {
  readonly id: number;
  start: number | undefined;
}

/**
 * Proves when a slot may skip reading CHAT for a gap before a delivered event (thread-slot.ts).
 * Events of one thread are contiguous in what a slot must apply only if nothing of the thread
 * between its cursor and the new event went elsewhere. That holds while this worker saw every
 * delivery of the consumer (delivery sequences 1 apart: no other worker on the consumer, nothing
 * lost in transit, the consumer not recreated) and no slot dropped events it had been given
 * (a slot that fails, loses its thread or is abandoned calls `interrupt`). Anything else starts
 * a new epoch; a slot trusts only events routed in the epoch it joined, after it read CHAT once.
 */
/** Unacknowledged deliveries past which the worker counts as behind (a few bursts' worth). */
const BEHIND_WHEN_HELD = 100;

/** What the ledger knows of one consumer's deliveries (one per partition when partitioned). */
interface ConsumerTrack {
  epoch: DeliveryEpoch;
  lastDelivery: number | undefined;
  /** CHAT sequence of the last first delivery. */
  lastFirst: number | undefined;
  /** Events this consumer had not delivered yet, as of its last delivery. */
  pending: number;
}

export class DeliveryLedger {
  #epoch: DeliveryEpoch = { id: 0, start: undefined };
  /** Epoch ids are unique across consumers: a slot compares epochs by identity anyway. */
  #epochs = 0;
  readonly #consumers = new Map<string, ConsumerTrack>();
  #pending = 0;
  /** Deliveries not yet acknowledged (or given up by a slot that ended). */
  #held = 0;
  /** Set by `caughtUp`, cleared by the next delivery. */
  #caughtUp = false;
  /** Held deliveries from which the worker is crowded, and the consumer's limit (`lingerShare`). */
  #crowdedAt = Number.POSITIVE_INFINITY;
  #limit = Number.POSITIVE_INFINITY;

  /**
   * The worker is catching up on a backlog: the consumer had events not yet delivered at the
   * last delivery, or this worker holds many delivered events not yet acknowledged. A slot then
   * waits a little so one save stores several events.
   */
  get behind(): boolean {
    return !this.#caughtUp && (this.#pending > 0 || this.#held >= BEHIND_WHEN_HELD);
  }

  /**
   * No delivery came for a while and the consumer had none left to deliver: nothing more is
   * coming for now, so the worker is not behind whatever it holds (until the next delivery).
   */
  caughtUp(): void {
    this.#caughtUp = true;
  }

  /**
   * `held` from which the worker is crowded, and `limit`, the consumer's max_ack_pending: the
   * server stops delivering while the worker holds that many unacknowledged.
   */
  crowdAt(held: number, limit: number): void {
    this.#crowdedAt = held;
    this.#limit = Math.max(held, limit);
  }

  /**
   * The share of the save linger that chat events wait for more to share their save: all of it
   * until the worker is crowded, then half, falling to none as `held` reaches the consumer's
   * limit. Lingering events are better saved, and acknowledged, sooner than left to stop every
   * thread's deliveries until their linger runs out.
   */
  get lingerShare(): number {
    if (this.#held < this.#crowdedAt) return 1;
    const room = this.#limit - this.#crowdedAt;
    return room > 0 ? Math.max(0, this.#limit - this.#held) / room / 2 : 0;
  }

  /** Events the consumer had not delivered yet, as of the last delivery. */
  get undelivered(): number {
    return this.#pending;
  }

  /** Delivered events this worker holds unacknowledged (for tests and metrics). */
  get held(): number {
    return this.#held;
  }

  /** `count` delivered events were acknowledged, or dropped by a slot that ended. */
  released(count: number): void {
    this.#held = Math.max(0, this.#held - count);
  }

  /** The epoch of the consumer that delivered last (a slot made for its event joins it). */
  get current(): DeliveryEpoch {
    return this.#epoch;
  }

  /**
   * Records a delivery (in arrival order); returns the epoch it belongs to. `filtered`: the
   * consumer takes one partition's events (docs/scale-out.md), so its first deliveries come in
   * stream order but not one sequence apart.
   */
  observe(msg: JsMsg, filtered = false): DeliveryEpoch {
    const { deliverySequence, deliveryCount, consumer } = msg.info;
    let track = this.#consumers.get(consumer);
    if (!track) {
      track = {
        epoch: this.#nextEpoch(),
        lastDelivery: undefined,
        lastFirst: undefined,
        pending: 0,
      };
      this.#consumers.set(consumer, track);
    }
    if (track.lastDelivery === undefined || deliverySequence !== track.lastDelivery + 1) {
      track.epoch = this.#nextEpoch();
    }
    // The consumer takes every event of the stream: first deliveries come one stream sequence
    // apart. A stored event it passed over (purged, or skipped for any reason) starts a new
    // epoch, so no slot counts on having been given it (the gap read finds it if it is there).
    if (deliveryCount === 1) {
      if (
        track.lastFirst !== undefined &&
        (filtered ? msg.seq <= track.lastFirst : msg.seq !== track.lastFirst + 1)
      )
        track.epoch = this.#nextEpoch();
      track.lastFirst = msg.seq;
    }
    track.lastDelivery = deliverySequence;
    this.#pending += msg.info.pending - track.pending;
    track.pending = msg.info.pending;
    this.#caughtUp = false;
    this.#held += 1;
    if (track.epoch.start === undefined && deliveryCount === 1) track.epoch.start = msg.seq;
    this.#epoch = track.epoch;
    return track.epoch;
  }

  /** A consumer this worker no longer reads (its partition moved): its backlog is not ours. */
  forget(consumer: string): void {
    const track = this.#consumers.get(consumer);
    if (!track) return;
    this.#pending -= track.pending;
    this.#consumers.delete(consumer);
  }

  /** Events given to a slot were dropped (or a delivery was not routed): trust nothing older. */
  interrupt(): void {
    for (const track of this.#consumers.values()) track.epoch = this.#nextEpoch();
    this.#epoch = this.#nextEpoch();
  }

  #nextEpoch(): DeliveryEpoch {
    return { id: ++this.#epochs, start: undefined };
  }
}

/** A first delivery, routed in `epoch`: may the slot (joined to `joined`) skip the gap read? */
export function provablyContiguous(
  msg: JsMsg,
  epoch: DeliveryEpoch,
  joined: DeliveryEpoch,
  cursor: number,
): boolean {
  return (
    epoch === joined &&
    epoch.start !== undefined &&
    msg.info.deliveryCount === 1 &&
    cursor + 1 >= epoch.start
  );
}
