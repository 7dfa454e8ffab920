import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { coalesceWrites } from "../services/nats/coalesced-writes.ts";

/** nats.js's protocol handler as coalesceWrites sees it: a buffer, its flush, its close. */
function fakeConnection() {
  const log: string[] = [];
  let buffered = 0;
  const protocol = {
    pendingLimit: 100,
    outbound: { size: () => buffered },
    flushPending() {
      if (buffered > 0) log.push(`write ${buffered}`);
      buffered = 0;
    },
    close() {
      log.push("close");
      return Promise.resolve();
    },
  };
  // As nats.js's sendCommand does: buffer the bytes, then ask for a flush.
  const send = (bytes: number) => {
    buffered += bytes;
    protocol.flushPending();
  };
  return { nc: { protocol } as unknown as NatsConnection, protocol, send, log };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("coalesceWrites", () => {
  it("writes what a turn sends once, after the turn's microtasks", async () => {
    const { nc, send, log } = fakeConnection();
    expect(coalesceWrites(nc)).toBe(true);
    send(10);
    await Promise.resolve();
    send(20);
    await Promise.resolve().then(() => send(5));
    expect(log).toEqual([]);
    await nextTurn();
    expect(log).toEqual(["write 35"]);
    send(1);
    await nextTurn();
    expect(log).toEqual(["write 35", "write 1"]);
  });

  it("writes at once past the client's threshold, and before a close", async () => {
    const { nc, protocol, send, log } = fakeConnection();
    coalesceWrites(nc);
    send(150);
    expect(log).toEqual(["write 150"]);
    send(7);
    await protocol.close();
    expect(log).toEqual(["write 150", "write 7", "close"]);
  });

  it("wraps a connection once, and leaves one it does not know alone", async () => {
    const { nc, protocol, send, log } = fakeConnection();
    coalesceWrites(nc);
    coalesceWrites(nc);
    send(3);
    await protocol.close();
    expect(log).toEqual(["write 3", "close"]);
    const unknown = { protocol: { flushPending() {} } } as unknown as NatsConnection;
    expect(coalesceWrites(unknown)).toBe(false);
  });
});
