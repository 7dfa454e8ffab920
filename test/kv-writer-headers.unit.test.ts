import { headers, type MsgHdrs } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { writeHeaders } from "../services/nats/kv-writer.ts";

/** nats.js's publish calls `encode()` on the headers (MsgHdrsImpl; not in the public type). */
const encoded = (h: MsgHdrs): Uint8Array => (h as unknown as { encode(): Uint8Array }).encode();

const bytesOf = (expected: number | undefined, msgId: string | undefined): Uint8Array => {
  const h = headers();
  if (expected !== undefined) h.set("Nats-Expected-Last-Subject-Sequence", String(expected));
  if (msgId !== undefined) h.set("Nats-Msg-Id", msgId);
  return encoded(h);
};

describe("writeHeaders (a JetStream write's headers, encoded by hand)", () => {
  it("encodes the same bytes as nats.js's headers() with the same values", () => {
    for (const [expected, msgId] of [
      [0, "t1:0:5"],
      [0, undefined],
      [0, undefined],
      [41, undefined],
      [undefined, "thread-é:3:12"],
      [7, " padded "],
      [undefined, undefined],
    ] as const) {
      expect(encoded(writeHeaders(expected, msgId))).toEqual(bytesOf(expected, msgId));
    }
  });

  it("refuses a value with a line break, as nats.js does", () => {
    expect(() => writeHeaders(0, "a\r\nb")).toThrow();
  });
});
