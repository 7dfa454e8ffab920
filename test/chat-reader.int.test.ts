import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { nextThreadEvent } from "../services/thread-worker/chat-reader.ts";
import {
  chatMessage,
  harness,
  publishRaw,
  uniqueNames,
  type Harness,
} from "./support/thread-worker.ts";

let nc: NatsConnection;
let h: Harness;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "chat-reader-test" });
  const names = uniqueNames();
  await ensureTopology(nc, names);
  h = await harness(nc, names);
});
afterAll(async () => {
  await nc.close();
});

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("nextThreadEvent: a thread's next event in CHAT (the worker's gap read)", () => {
  it("finds the first message.created or thread.deleted of the thread at or after a sequence", async () => {
    const s = h.s;
    const seqs: Record<string, number> = {};
    const put = async (name: string, subject: string, body: unknown) =>
      (seqs[name] = await publishRaw(h, subject, json(body)));
    await put("other", s.messageCreated("gr-other"), chatMessage("gr-other", 0));
    await put("m0", s.messageCreated("gr-a"), chatMessage("gr-a", 0));
    await put("deleted", s.threadDeleted("gr-a"), { thread: "gr-a", at: "2026-01-02T00:00:00Z" });
    await put("m1", s.messageCreated("gr-a"), chatMessage("gr-a", 1));
    const next = async (from: number) => (await nextThreadEvent(h.jsm, h.names, "gr-a", from))?.seq;
    expect(await next(0)).toBe(seqs.m0);
    expect(await next((seqs.m0 as number) + 1)).toBe(seqs.deleted);
    expect(await next((seqs.deleted as number) + 1)).toBe(seqs.m1);
    expect(await next((seqs.m1 as number) + 1)).toBeUndefined();
    expect(await nextThreadEvent(h.jsm, h.names, "gr-none", 1)).toBeUndefined();
    const event = await nextThreadEvent(h.jsm, h.names, "gr-a", seqs.deleted as number);
    expect(event?.event.kind).toBe("deleted");
  });
});
