import { randomUUID } from "node:crypto";
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { eraseSubject, purgeBySubjectIsSafe } from "../services/nats/erase.ts";
import { ensureTopology, publishDeadLetter, subjects } from "../services/nats/topology.ts";
import { lettersAfterDelete } from "../services/thread-worker/eraser.ts";
import { uniqueNames } from "./support/thread-worker.ts";

let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "erase-test" });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc.close();
});

describe("purgeBySubjectIsSafe", () => {
  it("trusts a filtered purge from nats-server 2.10 on, never before or when unknown", () => {
    expect(purgeBySubjectIsSafe("2.9.10")).toBe(false);
    expect(purgeBySubjectIsSafe("2.9.25")).toBe(false);
    expect(purgeBySubjectIsSafe("2.10.0")).toBe(true);
    expect(purgeBySubjectIsSafe("v2.11.3")).toBe(true);
    expect(purgeBySubjectIsSafe("3.0.0")).toBe(true);
    expect(purgeBySubjectIsSafe(undefined)).toBe(false);
    expect(purgeBySubjectIsSafe("dev")).toBe(false);
  });
});

/**
 * Two threads interleaved on one stream, a consumer on both that has taken the first two events;
 * then thread a is erased and the consumer reads what is left.
 */
async function eraseWhileConsuming(purge: boolean): Promise<{
  delivered: string[];
  left: { a: number; b: number };
  removed: number;
}> {
  const prefix = `er${randomUUID().slice(0, 8)}`;
  const stream = prefix.toUpperCase();
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`], allow_direct: true });
  await jsm.consumers.add(stream, {
    durable_name: "worker",
    ack_policy: AckPolicy.Explicit,
    filter_subject: `${prefix}.>`,
  });
  const js = jetstream(nc);
  for (let i = 1; i <= 3; i++) {
    await js.publish(`${prefix}.a.message.created`, `a${i}`);
    await js.publish(`${prefix}.b.message.created`, `b${i}`);
  }
  const consumer = await js.consumers.get(stream, "worker");
  const first = await consumer.fetch({ max_messages: 2, expires: 2_000 });
  for await (const m of first) m.ack();

  const removed = await eraseSubject(jsm, stream, `${prefix}.a.>`, { purge });

  const delivered: string[] = [];
  const rest = await consumer.fetch({ max_messages: 10, expires: 1_000 });
  for await (const m of rest) {
    delivered.push(m.string());
    m.ack();
  }
  const count = async (thread: string) => {
    let n = 0;
    let from = 1;
    for (;;) {
      const m = await jsm.direct.getMessage(stream, {
        next_by_subj: `${prefix}.${thread}.>`,
        seq: from,
      });
      if (!m) return n;
      n += 1;
      from = m.seq + 1;
    }
  };
  const left = { a: await count("a"), b: await count("b") };
  await jsm.streams.delete(stream);
  return { delivered, left, removed };
}

describe("eraseSubject", () => {
  it("deleting one by one erases the subject and the consumer still gets every other event", async () => {
    const { delivered, left, removed } = await eraseWhileConsuming(false);
    expect(removed).toBe(3);
    expect(left).toEqual({ a: 0, b: 3 });
    expect(delivered).toEqual(["b2", "b3"]);
  });

  it("stops below a sequence when asked", async () => {
    const stream = `ERB${randomUUID().slice(0, 8)}`;
    const subject = stream.toLowerCase();
    await jsm.streams.add({ name: stream, subjects: [`${subject}.>`], allow_direct: true });
    const js = jetstream(nc);
    const seqs: number[] = [];
    for (let i = 0; i < 5; i++) seqs.push((await js.publish(`${subject}.a.x`, `m${i}`)).seq);
    const removed = await eraseSubject(jsm, stream, `${subject}.a.>`, {
      purge: false,
      below: seqs[3],
      parallel: 2,
    });
    expect(removed).toBe(3);
    const info = await jsm.streams.info(stream);
    expect(info.state.messages).toBe(2);
    expect(info.state.first_seq).toBe(seqs[3]);
    await jsm.streams.delete(stream);
  });

  it("a purge by subject keeps the consumer's place only on a server that says it does", async () => {
    // On nats-server < 2.10 the filtered purge sends the consumer to the end of the stream: b2
    // and b3 are never delivered. This is why the worker deletes one by one there.
    const { delivered, left } = await eraseWhileConsuming(true);
    expect(left).toEqual({ a: 0, b: 3 });
    if (purgeBySubjectIsSafe(nc.info?.version)) expect(delivered).toEqual(["b2", "b3"]);
    else expect(delivered).toEqual([]);
  });
});

describe("lettersAfterDelete", () => {
  it("finds the first dead letter of an event after the delete, or none", async () => {
    const names = uniqueNames();
    const { js } = await ensureTopology(nc, names);
    const s = subjects(names);
    const letter = (thread: string, seq: number | undefined) =>
      publishDeadLetter(js, names, {
        reason: `r${seq}`,
        subject: s.messageCreated(thread),
        data: new Uint8Array([1]),
        ...(seq === undefined ? {} : { seq }),
      });
    const find = (thread: string, deletedAt: number) =>
      lettersAfterDelete(
        jsm,
        names.deadStream,
        s.deadLetterOf(thread),
        names.chatStream,
        deletedAt,
      );

    expect(await find("a", 7)).toBeUndefined(); // no letter at all
    await letter("a", 5);
    await letter("b", 8);
    await letter("a", undefined);
    await letter("a", 7);
    expect(await find("a", 7)).toBeUndefined(); // none after the delete: purge them all
    const late = await letter("a", 9);
    await letter("b", 10);
    await letter("a", 11);
    expect(await find("a", 7)).toBe(late.seq);
    expect(await find("a", 4)).toBe(late.seq - 4); // the first letter of a, #5
    expect(await find("b", 7)).toBe(late.seq - 3); // b's #8

    // The purge it bounds leaves the later letters, and b's.
    await eraseSubject(jsm, names.deadStream, s.deadLetterOf("a"), {
      purge: true,
      below: late.seq,
    });
    const info = await jsm.streams.info(names.deadStream, { subjects_filter: ">" });
    expect(info.state.subjects).toEqual({ [s.deadLetterOf("a")]: 2, [s.deadLetterOf("b")]: 2 });
  });
});
