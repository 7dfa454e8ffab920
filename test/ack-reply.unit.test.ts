import { describe, expect, it } from "vitest";
import { deliveryOf } from "../services/nats/ack-reply.ts";

describe("deliveryOf (a JetStream reply subject read from its end)", () => {
  it("reads stream sequence, delivery sequence and pending from the old form", () => {
    expect(deliveryOf("$JS.ACK.CHAT.c1.1.55.7.1700000000000000000.12", "c1")).toEqual({
      sseq: 55,
      dseq: 7,
      pending: 12,
    });
    expect(deliveryOf("$JS.ACK.CHAT.c1.3.1.1.1700000000000000000.0", "c1")).toEqual({
      sseq: 1,
      dseq: 1,
      pending: 0,
    });
  });

  it("reads the newer form, with domain and account before the stream and a token after pending", () => {
    expect(
      deliveryOf("$JS.ACK.hub.ACCHASH.CHAT.c1.1.9001.40.1700000000000000000.3.x7Yz", "c1"),
    ).toEqual({ sseq: 9001, dseq: 40, pending: 3 });
  });

  it("refuses a reply of another consumer, even one whose name starts the same", () => {
    expect(deliveryOf("$JS.ACK.CHAT.c12.1.55.7.17.12", "c1")).toBeUndefined();
    expect(deliveryOf("$JS.ACK.CHAT.c.1.55.7.17.12", "c1")).toBeUndefined();
    expect(deliveryOf("$JS.ACK.hub.H.CHAT.other.1.5.4.17.0.r", "c1")).toBeUndefined();
  });

  it("refuses what is not a JetStream delivery", () => {
    for (const reply of [
      "",
      "_INBOX.abc.1",
      "$JS.ACK.CHAT.c1.1.55.7.17", // a token short
      "$JS.ACK.CHAT.c1.1.55.7.17.12.x.y", // neither form
      "$JS.ACK.CHAT.c1.1.5x.7.17.12", // not a number
      "$JS.ACK.CHAT.c1.1.55..17.12", // empty
      "$JS.ACK.CHAT.c1.1.55.7.17.-1",
    ]) {
      expect(deliveryOf(reply, "c1"), reply).toBeUndefined();
    }
  });
});
