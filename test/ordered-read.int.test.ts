import { jetstreamManager, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { randomUUID } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import {
  OrderedReadError,
  readInOrder,
  type OrderedReadOptions,
  type RawMessage,
} from "../services/nats/ordered-read.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A stream of its own with `count` messages `m0…` on `<name>.a` and `<name>.b` by turns. */
async function filled(
  count: number,
): Promise<{ nc: NatsConnection; jsm: JetStreamManager; name: string }> {
  const nc = await scope.connect("ordered-read-test");
  const jsm = await jetstreamManager(nc);
  const name = `OR_${randomUUID().slice(0, 8)}`;
  await jsm.streams.add({ name, subjects: [`${name}.>`], storage: StorageType.Memory });
  const js = jsm.jetstream();
  for (let i = 0; i < count; i++) {
    await js.publish(`${name}.${i % 2 === 0 ? "a" : "b"}`, encoder.encode(`m${i}`));
  }
  return { nc, jsm, name };
}

/** Reads `name` with `options`, awaiting `during(seq)` after each message; the texts read. */
async function textsRead(
  at: { nc: NatsConnection; jsm: JetStreamManager; name: string },
  options: OrderedReadOptions,
  during: (seq: number) => Promise<unknown>,
): Promise<string[]> {
  const read: string[] = [];
  await readInOrder(
    at.nc,
    at.jsm,
    at.name,
    options,
    () => {},
    async (m) => {
      read.push(decoder.decode(m.data));
      await during(m.seq);
    },
  );
  return read;
}

/** Reads `name` whole with `options`: the count it announced first, and every message. */
async function readWhole(
  at: { nc: NatsConnection; jsm: JetStreamManager; name: string },
  options: OrderedReadOptions,
): Promise<{ total: number; read: RawMessage[] }> {
  const read: RawMessage[] = [];
  let total = -1;
  await readInOrder(
    at.nc,
    at.jsm,
    at.name,
    options,
    (n) => (total = n),
    (m) => void read.push(m),
  );
  return { total, read };
}

const texts = (read: RawMessage[]) => read.map((m) => decoder.decode(m.data));
const expected = (from: number, to: number, step = 1) =>
  Array.from({ length: Math.ceil((to - from) / step) }, (_, k) => `m${from + k * step}`);

describe("readInOrder (a lean ordered read of a stream)", () => {
  it("reads every message once, in order, with its subject and sequence, and says how many first", async () => {
    const at = await filled(500);
    const { jsm, name } = at;
    const { total, read } = await readWhole(at, { batch: 64 });
    expect(total).toBe(500);
    expect(texts(read)).toEqual(expected(0, 500));
    expect(read.map((m) => m.seq)).toEqual(expected(0, 500).map((_, i) => i + 1));
    expect(read[1]?.subject).toBe(`${name}.b`);
    // Its consumer is gone once the read is done.
    await expect.poll(async () => (await jsm.consumers.list(name).next()).length).toBe(0);
  });

  it("reads only what a filter selects", async () => {
    const at = await filled(101);
    const { total, read } = await readWhole(at, { filter: `${at.name}.b`, batch: 16 });
    expect(total).toBe(50);
    expect(texts(read)).toEqual(expected(1, 101, 2));
  });

  it("keeps a pull's bytes under maxBytes, and fetches a message bigger than that alone, without a stall", async () => {
    const at = await filled(0);
    const js = at.jsm.jetstream();
    const sizes = Array.from({ length: 30 }, (_, i) => (i === 17 ? 300_000 : 60_000 + i));
    for (const [i, size] of sizes.entries()) {
      const body = new Uint8Array(size).fill(97);
      body.set(encoder.encode(`m${i}:`));
      await js.publish(`${at.name}.a`, body);
    }
    const started = Date.now();
    // The idle check (which would also recover a stalled pull) cannot fire within the test.
    const { read } = await readWhole(at, { batch: 10, maxBytes: 250_000, idleMs: 60_000 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(read.map((m) => m.data.length)).toEqual(sizes);
    expect(read.map((m) => decoder.decode(m.data.subarray(0, 4)).split(":")[0])).toEqual(
      expected(0, 30),
    );
  });

  it("an empty stream: zero, and done at once", async () => {
    const { nc, jsm, name } = await filled(0);
    let total = -1;
    let events = 0;
    await readInOrder(
      nc,
      jsm,
      name,
      {},
      (n) => (total = n),
      () => void (events += 1),
    );
    expect([total, events]).toEqual([0, 0]);
  });

  it("waits for a returned promise before handing over the next message", async () => {
    const { nc, jsm, name } = await filled(300);
    const read: string[] = [];
    let inside = 0;
    let overlapped = false;
    await readInOrder(
      nc,
      jsm,
      name,
      { batch: 32 },
      () => {},
      async (m) => {
        if ((inside += 1) > 1) overlapped = true;
        if (m.seq % 50 === 0) await new Promise((r) => setTimeout(r, 30));
        read.push(decoder.decode(m.data));
        inside -= 1;
      },
    );
    expect(overlapped).toBe(false);
    expect(read).toEqual(expected(0, 300));
  });

  it("goes on with a fresh consumer after the last message taken when its consumer is deleted", async () => {
    const at = await filled(400);
    // A deleted consumer's pulls go unanswered: the idle check finds it gone.
    const read = await textsRead(at, { batch: 25, idleMs: 200 }, async (seq) => {
      if (seq !== 120) return;
      // Someone deletes the read's consumer while it is paused (an operator, an expiry).
      for (const info of await at.jsm.consumers.list(at.name).next()) {
        await at.jsm.consumers.delete(at.name, info.name);
      }
    });
    expect(read).toEqual(expected(0, 400));
  });

  it("after a long pause of onEvent, goes on with a fresh consumer: every message once, in order", async () => {
    const at = await filled(300);
    // Counts the consumers the read makes, and where each starts, without a JetStream call
    // from onEvent (which, on a loaded host, could itself pause past the threshold).
    const add = vi.spyOn(at.jsm.consumers, "add");
    const pauseMs = 200;
    const read: string[] = [];
    await readInOrder(
      at.nc,
      at.jsm,
      at.name,
      { batch: 20, freshAfterPauseMs: pauseMs },
      () => {},
      // Only message 100 returns a promise: the only pause the read can see.
      (m) => {
        read.push(decoder.decode(m.data));
        if (m.seq === 100) return new Promise((r) => setTimeout(r, 2 * pauseMs));
      },
    );
    expect(read).toEqual(expected(0, 300));
    // The first from the start; one fresh one after the pause, past what was taken before it.
    const starts = add.mock.calls.map(([, config]) => config.opt_start_seq);
    expect(starts).toHaveLength(2);
    expect(starts[0]).toBeUndefined();
    expect(starts[1]).toBeGreaterThan(100);
  });

  it("stops at what is left when the rest is purged while it reads (nothing waited for past idleMs)", async () => {
    const at = await filled(300);
    const started = Date.now();
    const read = await textsRead(at, { batch: 10, idleMs: 200 }, async (seq) => {
      if (seq === 5) await at.jsm.streams.purge(at.name);
    });
    expect(read.slice(0, 5)).toEqual(expected(0, 5));
    expect(read.length).toBeLessThan(300);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it("rejects with what onEvent threw, and removes its consumer", async () => {
    const { nc, jsm, name } = await filled(50);
    const failure = new Error("bad event");
    await expect(
      readInOrder(
        nc,
        jsm,
        name,
        {},
        () => {},
        (m) => {
          if (m.seq === 7) throw failure;
        },
      ),
    ).rejects.toBe(failure);
    await expect.poll(async () => (await jsm.consumers.list(name).next()).length).toBe(0);
  });

  it("a stream that does not exist is a clear error", async () => {
    const { nc, jsm } = await filled(0);
    const err = await readInOrder(
      nc,
      jsm,
      "NO_SUCH_STREAM",
      {},
      () => {},
      () => {},
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OrderedReadError);
    expect((err as Error).message).toMatch(
      /reading stream NO_SUCH_STREAM in order: could not make a consumer.*stream not found.*rerun/,
    );
  });
});
