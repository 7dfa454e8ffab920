import { describe, expect, it } from "vitest";
import { isStalled, STALL_MS, type ReadingState } from "../services/thread-worker/partitions.ts";

// When a held partition's consumer is taken for stuck and re-created (held-partitions.ts, every
// lag poll): after a server restart a cluster's consumer can stop delivering with events pending.
const NOW = 1_000_000;
const ACK_WAIT = 30_000;
const MAX_ACK_PENDING = 1_000;
const reading = (over: Partial<ReadingState>): ReadingState => ({
  at: NOW,
  ended: false,
  pending: 5,
  ackPending: 0,
  ...over,
});
const stalled = (r: ReadingState, ackWaitMs = ACK_WAIT) =>
  isStalled(r, NOW, ackWaitMs, MAX_ACK_PENDING);

describe("a held partition's consumer is stalled", () => {
  it("with events pending and none delivered for STALL_MS, well before the ack wait", () => {
    expect(STALL_MS).toBeLessThan(ACK_WAIT);
    expect(stalled(reading({ at: NOW - STALL_MS - 1 }))).toBe(true);
    expect(stalled(reading({ at: NOW - STALL_MS + 1 }))).toBe(false);
  });

  it("after the ack wait when that is shorter", () => {
    expect(stalled(reading({ at: NOW - 2_001 }), 2_000)).toBe(true);
    expect(stalled(reading({ at: NOW - 1_999 }), 2_000)).toBe(false);
  });

  it("not when nothing is pending, or the server holds back at max_ack_pending", () => {
    const idle = NOW - 10 * STALL_MS;
    expect(stalled(reading({ at: idle, pending: 0 }))).toBe(false);
    expect(stalled(reading({ at: idle, ackPending: MAX_ACK_PENDING }))).toBe(false);
    expect(stalled(reading({ at: idle, ackPending: MAX_ACK_PENDING - 1 }))).toBe(true);
  });

  it("at once when its pull loop ended or its consumer is gone", () => {
    expect(stalled(reading({ ended: true, pending: 0 }))).toBe(true);
  });
});
