import { jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology, subjects } from "../services/nats/topology.ts";
import { ApiError } from "../services/api/api-error.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import type { Operations } from "../services/api/operations-interface.ts";
import {
  createReader,
  type NewerReadPath,
  type ReaderOptions,
  type StoredMessage,
  type ThreadReader,
} from "../services/nats/reader.ts";
import { makeMessage } from "./support/conversation.ts";
import {
  publishMessages,
  publishState,
  replayWithNodes,
  uniqueNames,
} from "./support/outline-fixture.ts";
import { SMALL_SETTINGS, startTestApi, type TestApi } from "./support/prompt-builder-api.ts";

// Messages newer than a thread's snapshot are read with one direct get each (next_by_subj) up to
// a bound, and through an ordered consumer past it. Both paths must give the same messages, and
// so the same prompt bytes, whatever the stream holds: invalid events, another thread's
// messages in between, a platform retry stored twice, purged messages, a recreated stream.

const N = 120; // messages of the thread published first
const K = 100; // messages the snapshot reflects

let nc: NatsConnection;
let js: JetStreamClient;
let kv: KV;
let names: InfraNames;
const thread = `n-${Date.now().toString(36)}`;
const other = `${thread}-other`;
let log: { message: Message; seq: number }[] = [];
let snapshotSeq = 0;

const message = (i: number): Message => {
  const m = makeMessage(
    thread,
    i,
    `message ${i} é ${"about the plan\nand its costs ".repeat(i % 3)}`,
  );
  return m.from === "north" ? { ...m, role: "assistant", state: { step: i } } : m;
};

async function publish(from: number, to: number): Promise<void> {
  const msgs = Array.from({ length: to - from }, (_, k) => message(from + k));
  log = [...log, ...(await publishMessages(js, names, msgs))];
}

async function newestSeq(): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const last = await jsm.direct.getMessage(names.chatStream, {
    last_by_subj: subjects(names).messageCreated(thread),
  });
  return last?.seq ?? 0;
}

interface Recorded {
  reader: ThreadReader;
  reads: { path: NewerReadPath; messages: number }[];
}

function reader(options: ReaderOptions = {}): Recorded {
  const reads: Recorded["reads"] = [];
  return {
    reads,
    reader: createReader(nc, names, {
      fetchExpiresMs: 1_000,
      ...options,
      onNewerRead: (path, messages) => reads.push({ path, messages }),
    }),
  };
}

const ids = (list: StoredMessage[]) => list.map((m) => [m.seq, m.message.id]);

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const REQUESTS: Record<string, string>[] = [
  { agent: "north" },
  { agent: "Ana", format: "anthropic" },
  { agent: "north", from: new Date(Date.UTC(2026, 0, 1) + 90 * 60_000).toISOString() },
];

/** Every request shape's bytes, built with nothing kept, through these operations. */
async function prompts(ops: Operations): Promise<string[]> {
  const out: string[] = [];
  for (const args of REQUESTS) out.push((await ops.promptBody({ ...args, thread })).toString());
  return out;
}

const uncachedOps = (directReads: number, maxNewer?: number) =>
  createOperations(reader({ directReads, cacheBytes: 0 }).reader, {
    promptCacheBytes: 0,
    ...(maxNewer === undefined ? {} : { maxNewer }),
  });

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "prompt-builder-newer" });
  names = uniqueNames();
  ({ js, kv } = await ensureTopology(nc, names));
  await publish(0, K);
  const { state, nodes } = replayWithNodes(thread, SMALL_SETTINGS, log);
  await publishState(js, kv, names, state, nodes);
  snapshotSeq = log.at(-1)?.seq ?? 0;
  // Newer than the snapshot: valid messages, and in between what a thread's subject may hold.
  const s = subjects(names);
  await publish(K, K + 5);
  await js.publish(s.messageCreated(other), JSON.stringify(makeMessage(other, 0, "elsewhere")));
  await js.publish(s.messageCreated(thread), "{not json", { msgID: "bad-1" });
  await js.publish(s.messageCreated(thread), JSON.stringify(makeMessage(other, 1, "wrong")), {
    msgID: "wrong-thread-1",
  });
  // A platform retry past the dedupe window: stored again under another Nats-Msg-Id.
  await js.publish(s.messageCreated(thread), JSON.stringify(message(K + 1)), { msgID: "retry-1" });
  await publish(K + 5, N);
});

afterAll(async () => {
  await nc?.close();
});

describe("messages newer than the snapshot", () => {
  it("direct gets and the ordered consumer read the same messages, valid ones only", async () => {
    const until = await newestSeq();
    const direct = reader();
    const consumer = reader({ directReads: 0 });
    const a = await direct.reader.messagesAfter(thread, snapshotSeq, until, 1_000);
    const b = await consumer.reader.messagesAfter(thread, snapshotSeq, until, 1_000);
    expect(a).toEqual(b);
    // N − K valid messages plus the retry; the invalid and wrong-thread events are left out.
    expect(a.map((m) => m.message.id)).toEqual([
      ...log.slice(K, K + 5).map((l) => l.message.id),
      message(K + 1).id,
      ...log.slice(K + 5).map((l) => l.message.id),
    ]);
    // Every stored event of the thread's subject counts, the invalid two included.
    expect(direct.reads).toEqual([{ path: "direct", messages: N - K + 3 }]);
    expect(consumer.reads).toEqual([{ path: "consumer", messages: N - K + 3 }]);
  });

  it("stops at untilSeq, and reads nothing when there is nothing newer", async () => {
    const cut = log[K + 2]?.seq ?? 0;
    const { reader: r, reads } = reader();
    expect(ids(await r.messagesAfter(thread, snapshotSeq, cut, 1_000))).toEqual(
      log.slice(K, K + 3).map((l) => [l.seq, l.message.id]),
    );
    expect(await r.messagesAfter(thread, cut, cut, 1_000)).toEqual([]);
    expect(reads).toEqual([{ path: "direct", messages: 3 }]);
  });

  it("past the bound, the consumer reads the rest from where the direct gets stopped", async () => {
    const until = await newestSeq();
    const all = await reader().reader.messagesAfter(thread, snapshotSeq, until, 1_000);
    for (const bound of [1, 3, 7, 8, N - K + 2]) {
      const { reader: r, reads } = reader({ directReads: bound });
      expect(ids(await r.messagesAfter(thread, snapshotSeq, until, 1_000))).toEqual(ids(all));
      expect(reads).toEqual([{ path: "consumer", messages: N - K + 3 }]);
    }
  });

  it("gives prompt bytes identical to the consumer path's", async () => {
    const consumer = await prompts(uncachedOps(0));
    expect(await prompts(uncachedOps(32))).toEqual(consumer);
    expect(await prompts(uncachedOps(4))).toEqual(consumer);
    // With the parsed messages and the bodies kept, twice (built, then kept).
    const kept = createOperations(reader().reader);
    expect(await prompts(kept)).toEqual(consumer);
    expect(await prompts(kept)).toEqual(consumer);
    const stats = (JSON.parse(consumer[0] ?? "") as { stats: { newerThanSnapshot: number } }).stats;
    expect(stats.newerThanSnapshot).toBe(N - K);
  });

  it("answers 503 SNAPSHOT_BEHIND past max on either path", async () => {
    const until = await newestSeq();
    const stored = N - K + 3;
    for (const directReads of [0, 4, 32]) {
      const { reader: r } = reader({ directReads });
      const err = await rejection(r.messagesAfter(thread, snapshotSeq, until, stored - 1));
      // Asked again only once the worker can have caught up: HTTP sends it as Retry-After.
      expect({ status: err.status, code: err.code, retryAfter: err.retryAfter }).toEqual({
        status: 503,
        code: "SNAPSHOT_BEHIND",
        retryAfter: 5,
      });
      expect(err.message).toContain(`more than ${stored - 1} messages newer`);
      expect(await r.messagesAfter(thread, snapshotSeq, until, stored)).toHaveLength(N - K + 1);
      const ops = uncachedOps(directReads, 5);
      const e = await rejection(ops.promptBody({ thread, agent: "north" }));
      expect({ status: e.status, code: e.code, retryAfter: e.retryAfter }).toEqual({
        status: 503,
        code: "SNAPSHOT_BEHIND",
        retryAfter: 5,
      });
    }
  });

  it("turns: a message, then a read, the snapshot moving on now and then; as the consumer reads", async () => {
    const t = `${thread}-turns`;
    const hinted = reader();
    const stored: number[] = [];
    let after = 0;
    for (let turn = 0; turn < 12; turn++) {
      // Another thread's message between, so the thread's sequences are not consecutive.
      await js.publish(
        subjects(names).messageCreated(other),
        JSON.stringify(makeMessage(other, turn, "x")),
      );
      const [m] = await publishMessages(js, names, [makeMessage(t, turn, `turn ${turn}`)]);
      stored.push(m?.seq ?? 0);
      if (turn % 5 === 4) after = stored[turn - 2] ?? 0;
      const until = m?.seq ?? 0;
      const want = await reader({ directReads: 0 }).reader.messagesAfter(t, after, until, 100);
      expect(ids(await hinted.reader.messagesAfter(t, after, until, 100))).toEqual(ids(want));
      expect(want.length).toBeGreaterThan(0);
    }
    expect(hinted.reads.every((r) => r.path === "direct")).toBe(true);
  });

  it("keeps what it read for the tail reads once the snapshot catches up", async () => {
    const until = await newestSeq();
    const { reader: r } = reader();
    const first = await r.messagesAfter(thread, snapshotSeq, until, 1_000);
    for (const m of first) expect(await r.messageAt(thread, m.seq, m.message.id)).toBe(m);
  });
});

describe("purged and recreated", () => {
  it("skips a message purged in the middle, and ends at one purged at the end", async () => {
    // A thread of its own: nats-server 2.9 answers no last_by_subj for a subject whose last
    // message was deleted, which would hide the shared thread's messages from later tests.
    const p = `${thread}-purged`;
    const stored = await publishMessages(
      js,
      names,
      Array.from({ length: 5 }, (_, i) => makeMessage(p, i, `purged test ${i}`)),
    );
    const seq = (i: number) => stored[i]?.seq ?? 0;
    const until = seq(4);
    const jsm = await jetstreamManager(nc);
    // Read once first, so the messages are kept: a purged one must still not come back.
    const warm = reader();
    expect(await warm.reader.messagesAfter(p, seq(0), until, 1_000)).toHaveLength(4);
    await jsm.streams.deleteMessage(names.chatStream, seq(2));
    await jsm.streams.deleteMessage(names.chatStream, seq(4));
    const want = [1, 3].map((i) => [seq(i), stored[i]?.message.id]);
    for (const bound of [undefined, 0, 1]) {
      const { reader: r } = bound === undefined ? warm : reader({ directReads: bound });
      expect(ids(await r.messagesAfter(p, seq(0), until, 1_000))).toEqual(want);
    }
  });

  it("a recreated stream reusing sequences is read afresh, never from what was kept", async () => {
    const local = uniqueNames();
    const t = `r-${Date.now().toString(36)}`;
    const first = await ensureTopology(nc, local);
    const s = subjects(local);
    const put = async (tag: string, count: number) => {
      const out: number[] = [];
      for (let i = 0; i < count; i++) {
        const m = makeMessage(t, i, `${tag} ${i}`, { id: `${t}-${tag}-${i}` });
        out.push(
          (await first.js.publish(s.messageCreated(t), JSON.stringify(m), { msgID: m.id })).seq,
        );
      }
      return out;
    };
    const before = await put("old", 4);
    const kept = createReader(nc, local);
    const read = async () =>
      (await kept.messagesAfter(t, 0, before.at(-1) ?? 0, 100)).map((m) => m.message.text);
    expect(await read()).toEqual(["old 0", "old 1", "old 2", "old 3"]);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(local.chatStream);
    await ensureTopology(nc, local);
    expect(await put("new", 4)).toEqual(before);
    expect(await read()).toEqual(["new 0", "new 1", "new 2", "new 3"]);
    // Again with the very ids kept before at the same sequences, and other texts.
    await jsm.streams.delete(local.chatStream);
    await ensureTopology(nc, local);
    for (let i = 0; i < 4; i++) {
      const m = makeMessage(t, i, `newer ${i}`, { id: `${t}-new-${i}` });
      await first.js.publish(s.messageCreated(t), JSON.stringify(m), { msgID: m.id });
    }
    expect(await read()).toEqual(["newer 0", "newer 1", "newer 2", "newer 3"]);
    // What the tail reads by sequence and id get is what was read last, not the first stream's.
    const tail = await kept.messageAt(t, before[0] ?? 0, `${t}-new-0`);
    expect(tail?.message.text).toBe("newer 0");
    // And with another thread's message first, so each message sits one sequence further on.
    await jsm.streams.delete(local.chatStream);
    await ensureTopology(nc, local);
    await first.js.publish(
      s.messageCreated(`${t}-x`),
      JSON.stringify(makeMessage(`${t}-x`, 0, "x")),
    );
    for (let i = 0; i < 4; i++) {
      const m = makeMessage(t, i, `shifted ${i}`, { id: `${t}-new-${i}` });
      await first.js.publish(s.messageCreated(t), JSON.stringify(m), { msgID: m.id });
    }
    expect(await read()).toEqual(["shifted 0", "shifted 1", "shifted 2"]);
  });
});

describe("metrics", () => {
  let api: TestApi | undefined;

  beforeAll(async () => {
    api = await startTestApi(nc, names, { reader: { directReads: 8 } });
  });

  afterAll(async () => {
    await api?.close();
  });

  const counters = async (): Promise<Record<string, number>> => {
    const text = await (await fetch(`${api?.base}/metrics`)).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^outline_prompt_(\w+_total\{\w+="\w+"\}) (\d+)$/gm)) {
      out[m[1] ?? ""] = Number(m[2]);
    }
    return out;
  };

  it("counts prompt bodies kept and built, and newer-message reads by path", async () => {
    const start = await counters();
    expect(start).toMatchObject({
      'cache_total{result="hit"}': 0,
      'cache_total{result="miss"}': 0,
      'newer_reads_total{path="direct"}': 0,
      'newer_reads_total{path="consumer"}': 0,
    });
    const get = () => fetch(`${api?.base}/threads/${thread}/prompt?agent=north`);
    expect((await get()).status).toBe(200); // built: more newer than 8, so the consumer
    expect((await get()).status).toBe(200); // kept
    const afterFirst = await counters();
    expect(afterFirst).toMatchObject({
      'cache_total{result="hit"}': 1,
      'cache_total{result="miss"}': 1,
      'newer_reads_total{path="direct"}': 0,
      'newer_reads_total{path="consumer"}': 1,
    });
    // The snapshot catches up to all but the last two messages: those were read by the first
    // turn and are held, so nothing is read.
    const upTo = log.slice(0, -2);
    const { state, nodes } = replayWithNodes(thread, SMALL_SETTINGS, upTo);
    await publishState(js, kv, names, state, nodes);
    expect((await get()).status).toBe(200);
    expect(await counters()).toMatchObject({
      'cache_total{result="miss"}': 2,
      'newer_reads_total{path="direct"}': 0,
      'newer_reads_total{path="consumer"}': 1,
    });
    // A turn: one new message, one direct read of it alone.
    await publish(10_000, 10_001);
    expect((await get()).status).toBe(200);
    const end = await counters();
    expect(end).toMatchObject({
      'cache_total{result="miss"}': 3,
      'newer_reads_total{path="direct"}': 1,
      'newer_messages_total{path="direct"}': 1,
      'newer_reads_total{path="consumer"}': 1,
    });
  });
});
