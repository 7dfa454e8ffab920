import type { JsMsg } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  DeliveryLedger,
  provablyContiguous,
  type DeliveryEpoch,
} from "../services/thread-worker/delivery-ledger.ts";

/** A delivery as the consumer stamps it: stream sequence, consumer delivery sequence, count. */
function delivery(seq: number, deliverySequence: number, deliveryCount = 1, pending = 0): JsMsg {
  return { seq, info: { deliverySequence, deliveryCount, pending } } as unknown as JsMsg;
}

describe("delivery ledger: when a slot may skip its gap read", () => {
  it("contiguous first deliveries stay in one epoch that starts at the first one", () => {
    const ledger = new DeliveryLedger();
    const joined = ledger.current;
    const a = ledger.observe(delivery(10, 1));
    const b = ledger.observe(delivery(11, 2));
    const c = ledger.observe(delivery(12, 3));
    expect(a).toBe(b);
    expect(b).toBe(c);
    expect(a.start).toBe(10);
    // A slot created before the first delivery joined an older epoch: it reads CHAT once.
    expect(provablyContiguous(delivery(12, 3), c, joined, 9)).toBe(false);
    // Joined to the epoch, with a cursor at or past its start: every event between was routed.
    expect(provablyContiguous(delivery(12, 3), c, c, 11)).toBe(true);
    expect(provablyContiguous(delivery(12, 3), c, c, 9)).toBe(true);
    // A cursor before the epoch's start: events before it may have gone to a dead worker.
    expect(provablyContiguous(delivery(12, 3), c, c, 5)).toBe(false);
    // A stored event the consumer passed over (first deliveries 12 then 15): a new epoch.
    const jumped = ledger.observe(delivery(15, 4));
    expect(jumped).not.toBe(c);
    expect(jumped.start).toBe(15);
  });

  it("a hole in the delivery sequence (another worker, a lost delivery) starts a new epoch", () => {
    const ledger = new DeliveryLedger();
    const first = ledger.observe(delivery(1, 1));
    const afterHole = ledger.observe(delivery(3, 3));
    expect(afterHole).not.toBe(first);
    expect(afterHole.start).toBe(3);
    // A slot joined to the first epoch cannot skip for an event routed after the hole.
    expect(provablyContiguous(delivery(3, 3), afterHole, first, 1)).toBe(false);
    // The consumer recreated: delivery sequences start again at 1.
    const recreated = ledger.observe(delivery(4, 1));
    expect(recreated).not.toBe(afterHole);
  });

  it("a redelivery is never trusted and does not start an epoch's coverage", () => {
    const ledger = new DeliveryLedger();
    const epoch = ledger.observe(delivery(7, 1, 2));
    expect(epoch.start).toBeUndefined();
    expect(provablyContiguous(delivery(7, 1, 2), epoch, epoch, 100)).toBe(false);
    // The next first delivery, contiguous, starts coverage at its own sequence.
    expect(ledger.observe(delivery(20, 2)).start).toBe(20);
  });

  it("a slot that dropped events (interrupt) makes every slot read CHAT once more", () => {
    const ledger = new DeliveryLedger();
    const before = ledger.observe(delivery(1, 1));
    ledger.interrupt();
    const after: DeliveryEpoch = ledger.observe(delivery(2, 2));
    expect(after).not.toBe(before);
    expect(after.start).toBe(2);
    expect(provablyContiguous(delivery(2, 2), after, before, 1)).toBe(false);
  });

  it("counts the worker behind while the consumer has a backlog or many events are unacknowledged", () => {
    const ledger = new DeliveryLedger();
    ledger.observe(delivery(1, 1, 1, 5));
    expect(ledger.behind).toBe(true);
    ledger.observe(delivery(2, 2, 1, 0));
    expect(ledger.behind).toBe(false);
    for (let i = 3; i < 103; i++) ledger.observe(delivery(i, i, 1, 0));
    expect(ledger.held).toBe(102);
    expect(ledger.behind).toBe(true);
    ledger.released(102);
    expect(ledger.behind).toBe(false);
    ledger.released(5);
    expect(ledger.held).toBe(0);
  });

  it("caught up (nothing left to deliver, no delivery for a while): not behind whatever it holds, until the next delivery", () => {
    const ledger = new DeliveryLedger();
    for (let i = 1; i <= 150; i++) ledger.observe(delivery(i, i, 1, 150 - i));
    // The consumer is empty, but 150 events are held unacknowledged: behind.
    expect(ledger.undelivered).toBe(0);
    expect(ledger.behind).toBe(true);
    ledger.caughtUp();
    expect(ledger.behind).toBe(false);
    // The next delivery ends it: behind again by the usual rules.
    ledger.observe(delivery(151, 151, 1, 3));
    expect(ledger.undelivered).toBe(3);
    expect(ledger.behind).toBe(true);
  });

  it("lets events linger all of the save linger until crowded, then half, falling to none at the consumer's limit", () => {
    const ledger = new DeliveryLedger();
    for (let i = 1; i <= 90; i++) ledger.observe(delivery(i, i, 1, 10));
    expect(ledger.lingerShare).toBe(1); // never told a limit
    ledger.crowdAt(90, 100);
    expect(ledger.lingerShare).toBe(0.5);
    ledger.released(1);
    expect(ledger.lingerShare).toBe(1);
    for (let i = 91; i <= 96; i++) ledger.observe(delivery(i, i, 1, 10));
    expect(ledger.lingerShare).toBeCloseTo(0.25);
    for (let i = 97; i <= 101; i++) ledger.observe(delivery(i, i, 1, 10));
    expect(ledger.held).toBe(100);
    expect(ledger.lingerShare).toBe(0);
  });
});
