import { jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology, subjects } from "../services/nats/topology.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import type { Operations } from "../services/api/operations-interface.ts";
import { createReader } from "../services/nats/reader.ts";
import { makeMessage } from "./support/conversation.ts";
import {
  publishMessages,
  publishState,
  replayWithNodes,
  uniqueNames,
} from "./support/outline-fixture.ts";
import { SMALL_SETTINGS, startTestApi, type TestApi } from "./support/prompt-builder-api.ts";

// The prompt-builder keeps built prompt bodies (PromptCache). What it serves must be byte for
// byte what an uncached build gives for the same state, and never older than a fresh read: a new
// message, a new snapshot or a deleted thread shows on the very next request.

const SETTINGS = SMALL_SETTINGS;
const N = 120; // messages in CHAT at the start
const K = 100; // messages the first snapshot reflects
const TAIL_CAP = 600; // small enough that the cap leaves some whole messages out

let nc: NatsConnection;
let js: JetStreamClient;
let kv: KV;
let names: InfraNames;
let api: TestApi | undefined;
/** The same reads and build, with nothing kept: the reference every answer is compared with. */
let uncached: Operations;
const thread = `c-${Date.now().toString(36)}`;
let log: { message: Message; seq: number }[] = [];

function message(i: number): Message {
  const m = makeMessage(
    thread,
    i,
    `message ${i} é ${'about the "plan"\nand its costs '.repeat(1 + (i % 4))}`,
  );
  return m.from === "north" ? { ...m, role: "assistant", state: { step: i } } : m;
}

async function publish(from: number, to: number): Promise<void> {
  const msgs = Array.from({ length: to - from }, (_, k) => message(from + k));
  log = [...log, ...(await publishMessages(js, names, msgs))];
}

async function snapshotOf(count: number): Promise<void> {
  const { state, nodes } = replayWithNodes(thread, SETTINGS, log.slice(0, count));
  await publishState(js, kv, names, state, nodes);
}

const REQUESTS: Record<string, string>[] = [
  { agent: "north" },
  { agent: "Ana" },
  {},
  { agent: "north", format: "anthropic" },
  { agent: "north", from: new Date(Date.UTC(2026, 0, 1) + 90 * 60_000).toISOString() },
  { agent: "Ana", format: "anthropic", from: "2026-01-01T01:45:00+00:00" },
];

const query = (args: Record<string, string>) => new URLSearchParams(args).toString();

async function httpText(args: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${api?.base}/threads/${thread}/prompt?${query(args)}`);
  return { status: res.status, text: await res.text() };
}

async function natsText(args: Record<string, string>): Promise<{ status: string; text: string }> {
  const reply = await nc.request(`${names.apiPrefix}.prompt`, JSON.stringify({ ...args, thread }));
  return { status: reply.headers?.get("Outline-Status") ?? "", text: reply.string() };
}

const reference = async (args: Record<string, string>) =>
  JSON.stringify(await uncached.prompt({ ...args, thread }));

/** Every request shape, over HTTP (twice: built, then kept) and NATS, against the reference. */
async function expectAllFresh(): Promise<string[]> {
  const out: string[] = [];
  for (const args of REQUESTS) {
    const want = await reference(args);
    const first = await httpText(args);
    const again = await httpText(args);
    const nats = await natsText(args);
    expect({ args, status: first.status }).toEqual({ args, status: 200 });
    expect(first.text).toBe(want);
    expect(again.text).toBe(want);
    expect(nats).toEqual({ status: "200", text: want });
    out.push(want);
  }
  return out;
}

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "prompt-builder-cache" });
  names = uniqueNames();
  ({ js, kv } = await ensureTopology(nc, names));
  await publish(0, N);
  await snapshotOf(K);
  api = await startTestApi(nc, names, { operations: { tailCap: TAIL_CAP } });
  uncached = createOperations(createReader(nc, names, { cacheBytes: 0 }), {
    tailCap: TAIL_CAP,
    promptCacheBytes: 0,
  });
});

afterAll(async () => {
  await api?.close();
  await nc?.close();
});

describe("prompt cache", () => {
  it("serves bytes identical to an uncached build, and keeps them while nothing changed", async () => {
    const bodies = await expectAllFresh();
    // The fixture covers what a prompt depends on: an outline, newer messages, the cap, state.
    const north = JSON.parse(bodies[0] ?? "") as {
      stats: { lines: number; newerThanSnapshot: number; pending: number };
    };
    expect(north.stats.lines).toBeGreaterThan(0);
    expect(north.stats.newerThanSnapshot).toBe(N - K);
    expect(north.stats.pending).toBeGreaterThan(0);
    // Kept: the second body is the very chunks the first request built.
    const ops = api?.operations;
    const a = await ops?.promptChunks({ thread, agent: "north" });
    const b = await ops?.promptChunks({ thread, agent: "north" });
    expect(b).toBe(a);
    expect(Buffer.concat(a ?? []).toString()).toBe(bodies[0]);
    expect((await ops?.promptBody({ thread, agent: "north" }))?.toString()).toBe(bodies[0]);
    // The same as the object form the CLI and chat use.
    expect(JSON.stringify(await ops?.prompt({ thread, agent: "north" }))).toBe(bodies[0]);
  });

  it("a new message shows on the next request", async () => {
    const before = (await httpText({ agent: "north" })).text;
    await publish(N, N + 1);
    const after = await expectAllFresh();
    expect(after[0]).not.toBe(before);
    expect(after[0]).toContain(`message ${N} é`);
  });

  it("a new snapshot shows on the next request", async () => {
    const before = JSON.parse((await httpText({ agent: "north" })).text) as {
      stats: { snapshotSeq: number };
    };
    await snapshotOf(log.length);
    const after = JSON.parse((await expectAllFresh())[0] ?? "") as {
      stats: { snapshotSeq: number; newerThanSnapshot: number };
    };
    expect(after.stats.snapshotSeq).toBeGreaterThan(before.stats.snapshotSeq);
    expect(after.stats.newerThanSnapshot).toBe(0);
  });

  it("a deleted thread answers 404 at once", async () => {
    expect((await httpText({ agent: "north" })).status).toBe(200);
    await kv.purge(thread);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(names.chatStream, { filter: subjects(names).messageCreated(thread) });
    const http = await httpText({ agent: "north" });
    expect(http.status).toBe(404);
    const body = JSON.parse(http.text) as { error?: { code?: unknown } };
    expect(typeof body.error?.code).toBe("string");
    expect((await natsText({ agent: "north" })).status).toBe("404");
  });
});

describe("prompt cache, a held snapshot", () => {
  it("is not served once the thread is erased as on nats-server 2.9 (no marker)", async () => {
    log = [];
    await publish(200, 240);
    await snapshotOf(30);
    await expectAllFresh();
    // A turn asks only whether the held revision is still the key's value: a new message.
    await publish(240, 241);
    await expectAllFresh();
    // The eraser's order: the thread's CHAT messages, then the key, purged by subject (no marker).
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(names.chatStream, { filter: subjects(names).messageCreated(thread) });
    await jsm.streams.purge(`KV_${names.kvBucket}`, { filter: `$KV.${names.kvBucket}.${thread}` });
    // The thread's id used again: one message, no snapshot yet.
    log = [];
    await publish(300, 301);
    const after = JSON.parse((await expectAllFresh())[0] ?? "") as {
      stats: { snapshotSeq: number; newerThanSnapshot: number };
    };
    expect(after.stats).toMatchObject({ snapshotSeq: 0, newerThanSnapshot: 1 });
  });
});
