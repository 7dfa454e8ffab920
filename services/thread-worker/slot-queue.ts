import type { JsMsg } from "@nats-io/jetstream";
import type { NodeRef } from "../../shared/names.ts";
import type { ChatEventKind } from "../nats/subjects.ts";
import type { DecodedEvent } from "../nats/decode.ts";
import type { DeliveryEpoch } from "./delivery-ledger.ts";
import { METRIC, type MetricRegistry } from "./metrics.ts";

/** What a thread's queue holds: chat events in delivery order, and summaries coming back. */
export type Item =
  /** `type`: the event type its subject names (the subject was parsed once, to route it). */
  | { kind: "chat"; msg: JsMsg; epoch: DeliveryEpoch; type: ChatEventKind }
  | { kind: "built"; ref: NodeRef; text: string }
  | { kind: "failed"; ref: NodeRef; reason: string };

/** A chat event to handle: delivered (with the message to ack) or read from CHAT to fill a gap. */
export interface ChatEntry {
  kind: "entry";
  seq: number;
  subject: string;
  data: Uint8Array;
  event: DecodedEvent;
  msg?: JsMsg;
}

/** What a burst applies: chat entries (delivered or read for a gap) and summaries' results. */
export type BurstItem = ChatEntry | Exclude<Item, { kind: "chat" }>;

/**
 * A thread's events waiting for its loop. Taken a burst at a time; while the thread holds a
 * backlog, only the summaries' results are taken and the chat events wait (told to the server
 * as in progress, so it does not redeliver them meanwhile).
 */
export class SlotQueue {
  #items: Item[] = [];
  #lastHeartbeat = 0;

  get length(): number {
    return this.#items.length;
  }

  push(item: Item): void {
    this.#items.push(item);
  }

  /** The queue holds only chat events, which a backlog keeps waiting. */
  onlyChat(): boolean {
    return this.#items.every((item) => item.kind === "chat");
  }

  /** The next burst: the queue's head, or while backlogged only the summaries' results. */
  next(backlogged: boolean, maxBurst: number, metrics: MetricRegistry): Item[] {
    if (!backlogged) {
      // The whole queue (the usual case) is taken as it is, not copied out.
      if (this.#items.length > maxBurst) return this.#items.splice(0, maxBurst);
      const items = this.#items;
      this.#items = [];
      return items;
    }
    const results = this.#items.filter((item) => item.kind !== "chat");
    if (results.length > 0) this.#items = this.#items.filter((item) => item.kind === "chat");
    else this.#heartbeat(metrics);
    return results;
  }

  /** Empties the queue; returns how many chat events it gave up (redelivered after the ack wait). */
  clear(): number {
    const dropped = this.#items.filter((i) => i.kind === "chat").length;
    this.#items = [];
    return dropped;
  }

  /** Gives up the chat events waiting (summaries' results stay); returns how many. */
  dropChat(): number {
    const before = this.#items.length;
    this.#items = this.#items.filter((i) => i.kind !== "chat");
    return before - this.#items.length;
  }

  #heartbeat(metrics: MetricRegistry): void {
    const now = Date.now();
    if (now - this.#lastHeartbeat < 1_000) return;
    this.#lastHeartbeat = now;
    metrics.add(METRIC.backlogHolds);
    for (const item of this.#items) if (item.kind === "chat") item.msg.working();
  }
}
