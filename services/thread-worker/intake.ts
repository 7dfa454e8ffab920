import { decodeChatBody } from "../nats/decode.ts";
import { nextThreadEvent } from "./chat-reader.ts";
import { provablyContiguous, type DeliveryEpoch } from "./delivery-ledger.ts";
import { METRIC } from "./metrics.ts";
import type { BurstItem, ChatEntry, Item } from "./slot-queue.ts";
import type { SlotTools } from "./slot-tools.ts";

/** Where a thread's intake stands: its highest CHAT sequence handled, and its delivery epoch. */
export interface IntakeCursor {
  seen: number;
  /**
   * The delivery epoch whose events this slot has all been given since it last read CHAT up to
   * one of them (or since it was created): events routed in it need no gap read.
   */
  joined: DeliveryEpoch;
}

/**
 * A burst's items in stream order, ready to apply: each delivered event decoded, preceded by
 * any of the thread's events it follows that this slot was not given (read from CHAT).
 * Synchronous unless a gap must be read (most bursts): no promise and no await per burst.
 */
export function intake(
  tools: SlotTools,
  items: Item[],
  cursor: IntakeCursor,
  deleted: boolean,
): BurstItem[] | Promise<BurstItem[]> {
  const out: BurstItem[] = [];
  let seen = cursor.seen;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Item;
    if (item.kind === "chat" && mustReadGap(tools, item, cursor, seen, deleted)) {
      return intakeReading(tools, items, i, cursor, seen, deleted, out);
    }
    seen = take(tools, item, cursor, seen, out);
  }
  return out;
}

/** The rest of a burst from `from`, whose item there follows a gap: read, then taken. */
async function intakeReading(
  tools: SlotTools,
  items: Item[],
  from: number,
  cursor: IntakeCursor,
  seen: number,
  deleted: boolean,
  out: BurstItem[],
): Promise<BurstItem[]> {
  for (let i = from; i < items.length; i++) {
    const item = items[i] as Item;
    // The item at `from` was found to follow a gap (and counted) by `intake`.
    if (item.kind === "chat" && (i === from || mustReadGap(tools, item, cursor, seen, deleted))) {
      out.push(...(await readGap(tools, seen + 1, item.msg.seq)));
    }
    seen = take(tools, item, cursor, seen, out);
  }
  return out;
}

/**
 * Any delivered event may follow a gap, not only the burst's first: a redelivery followed by a
 * newer event, or events of this thread delivered to another worker. The gap is read from CHAT
 * and applied first, so the thread's events apply in stream order and none is skipped by the
 * sequence check. It is not read when the ledger proves this slot was given every event of the
 * thread since `seen` (they are in this burst or applied).
 */
function mustReadGap(
  tools: SlotTools,
  item: Extract<Item, { kind: "chat" }>,
  cursor: IntakeCursor,
  seen: number,
  deleted: boolean,
): boolean {
  if (deleted || item.msg.seq <= seen + 1) return false;
  const { ctx } = tools;
  if (ctx.skipGapReads && provablyContiguous(item.msg, item.epoch, cursor.joined, seen)) {
    ctx.metrics.add(METRIC.gapReadsSkipped);
    return false;
  }
  return true;
}

/** Adds `item` to the burst (a delivered event decoded); the highest sequence taken so far. */
function take(
  tools: SlotTools,
  item: Item,
  cursor: IntakeCursor,
  seen: number,
  out: BurstItem[],
): number {
  if (item.kind !== "chat") {
    out.push(item);
    return seen;
  }
  const { msg } = item;
  // Caught up to a first delivery of its epoch: every later event of the thread routed in it
  // comes to this slot, in stream order.
  if (item.epoch.start !== undefined && msg.info.deliveryCount === 1) cursor.joined = item.epoch;
  const { subject, data } = msg;
  out.push({
    kind: "entry",
    seq: msg.seq,
    subject,
    data,
    event: decodeChatBody(tools.thread, item.type, subject, data),
    msg,
  });
  return Math.max(seen, msg.seq);
}

/**
 * Events of this thread stored in [`fromSeq`, `seq`) and not handled yet: after a crash their
 * redelivery waits for the ack wait while newer events arrive at once, and with two workers
 * each receives only some of a thread's events. They are read from CHAT (the log) and applied
 * first; their redeliveries are then skipped by sequence.
 */
async function readGap(tools: SlotTools, fromSeq: number, seq: number): Promise<ChatEntry[]> {
  const { ctx, thread } = tools;
  const gap: ChatEntry[] = [];
  let from = fromSeq;
  while (from < seq) {
    ctx.metrics.add(METRIC.gapReads);
    const next = await tools.retry("read CHAT ahead of a redelivery", () =>
      nextThreadEvent(ctx.jsm, ctx.names, thread, from),
    );
    if (!next || next.seq >= seq) break;
    gap.push({
      kind: "entry",
      seq: next.seq,
      subject: next.subject,
      data: next.data,
      event: next.event,
    });
    from = next.seq + 1;
  }
  ctx.metrics.add(METRIC.gapFills, gap.length);
  return gap;
}
