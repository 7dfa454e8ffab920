import { decodeChatBody } from "./decode.ts";
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
 */
export async function intake(
  tools: SlotTools,
  items: Item[],
  cursor: IntakeCursor,
  deleted: boolean,
): Promise<BurstItem[]> {
  const { ctx, thread } = tools;
  const out: BurstItem[] = [];
  let seen = cursor.seen;
  for (const item of items) {
    if (item.kind !== "chat") {
      out.push(item);
      continue;
    }
    // Any delivered event may follow a gap, not only the burst's first: a redelivery followed
    // by a newer event, or events of this thread delivered to another worker. The gap is read
    // from CHAT and applied first, so the thread's events apply in stream order and none is
    // skipped by the sequence check. It is not read when the ledger proves this slot was given
    // every event of the thread since `seen` (they are in this burst or applied).
    const contiguous =
      ctx.skipGapReads && provablyContiguous(item.msg, item.epoch, cursor.joined, seen);
    if (!deleted && item.msg.seq > seen + 1) {
      if (contiguous) ctx.metrics.add(METRIC.gapReadsSkipped);
      else out.push(...(await readGap(tools, seen + 1, item.msg.seq)));
    }
    // Caught up to a first delivery of its epoch: every later event of the thread routed in it
    // comes to this slot, in stream order.
    if (item.epoch.start !== undefined && item.msg.info.deliveryCount === 1) {
      cursor.joined = item.epoch;
    }
    seen = Math.max(seen, item.msg.seq);
    const { subject, data } = item.msg;
    out.push({
      kind: "entry",
      seq: item.msg.seq,
      subject,
      data,
      event: decodeChatBody(thread, item.type, subject, data),
      msg: item.msg,
    });
  }
  return out;
}

/**
 * Events of this thread stored in [`fromSeq`, `seq`) and not handled yet: after a crash their
 * redelivery waits for the ack wait while newer events arrive at once, and with two workers
 * each receives only some of a thread's events. They are read from CHAT (the log) and applied
 * first; their redeliveries are then skipped by sequence.
 */
async function readGap(tools: SlotTools, fromSeq: number, seq: number): Promise<ChatEntry[]> {
  const { ctx, thread, retry } = tools;
  const gap: ChatEntry[] = [];
  let from = fromSeq;
  while (from < seq) {
    ctx.metrics.add(METRIC.gapReads);
    const next = await retry("read CHAT ahead of a redelivery", () =>
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
