import {
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats, NatsConnectError } from "../services/nats/connect.ts";
import {
  DEAD_LETTER_HEADERS,
  ensureTopology,
  publishDeadLetter,
  subjects,
  TopologyError,
} from "../services/nats/topology.ts";
import { uniqueNames } from "./support/thread-worker.ts";

let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "topology-test" });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc.close();
});

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a rejection");
}

describe("ensureTopology", () => {
  it("creates the streams and bucket with file storage, and a second call changes nothing", async () => {
    const names = uniqueNames();
    await ensureTopology(nc, names);
    const before = await jsm.streams.info(names.chatStream);
    const again = await ensureTopology(nc, names);
    const after = await jsm.streams.info(names.chatStream);
    expect(after.created).toBe(before.created);

    expect(before.config.subjects).toEqual([
      `${names.chatPrefix}.*.message.created`,
      `${names.chatPrefix}.*.thread.deleted`,
    ]);
    expect(before.config.storage).toBe(StorageType.File);
    expect(before.config.retention).toBe(RetentionPolicy.Limits);
    expect(before.config.max_age).toBe(0);
    expect(before.config.duplicate_window).toBe(120_000_000_000);

    const history = await jsm.streams.info(names.historyStream);
    expect(history.config.subjects).toEqual([`${names.historyPrefix}.>`]);
    expect(history.config.allow_direct).toBe(true);
    expect(history.config.storage).toBe(StorageType.File);

    const dead = await jsm.streams.info(names.deadStream);
    expect(dead.config.subjects).toEqual([names.deadSubject, `${names.deadSubject}.>`]);

    const status = await again.kv.status();
    expect(status.history).toBe(1);
    expect(status.streamInfo.config.storage).toBe(StorageType.File);
    await again.kv.put("t1", "snapshot");
    expect((await again.kv.get("t1"))?.string()).toBe("snapshot");
  });

  it("refuses an existing stream it cannot use, says what differs, and leaves it as it was", async () => {
    const names = uniqueNames();
    await jsm.streams.add({
      name: names.chatStream,
      subjects: [`${names.chatPrefix}.*.message.created`],
      storage: StorageType.Memory,
      max_age: 3_600_000_000_000,
    });
    const err = await rejection(ensureTopology(nc, names));
    expect(err).toBeInstanceOf(TopologyError);
    expect(err.message).toContain(`stream ${names.chatStream} (OUTLINE_CHAT_STREAM)`);
    expect(err.message).toContain(`${names.chatPrefix}.*.thread.deleted`);
    expect(err.message).toContain("storage is memory");
    expect(err.message).toContain("max_age");
    expect(err.message).toContain(`nats stream rm ${names.chatStream}`);

    const untouched = await jsm.streams.info(names.chatStream);
    expect(untouched.config.storage).toBe(StorageType.Memory);
    expect(untouched.config.subjects).toEqual([`${names.chatPrefix}.*.message.created`]);
  });

  it("accepts an existing chat stream whose subjects are wider than ours", async () => {
    const names = uniqueNames();
    await jsm.streams.add({
      name: names.chatStream,
      subjects: [`${names.chatPrefix}.>`],
      storage: StorageType.File,
      allow_direct: true,
    });
    await ensureTopology(nc, names);
    expect((await jsm.streams.info(names.chatStream)).config.subjects).toEqual([
      `${names.chatPrefix}.>`,
    ]);
  });

  it("names the stream that already captures our subjects", async () => {
    const names = uniqueNames();
    const squatter = `OTHER_${names.chatStream}`;
    await jsm.streams.add({ name: squatter, subjects: [`${names.historyPrefix}.>`] });
    const err = await rejection(ensureTopology(nc, names));
    expect(err).toBeInstanceOf(TopologyError);
    expect(err.message).toContain(`cannot create stream ${names.historyStream}`);
    expect(err.message).toContain(squatter);
  });

  it("refuses an existing bucket kept in memory", async () => {
    const names = uniqueNames();
    await jsm.streams.add({
      name: `KV_${names.kvBucket}`,
      subjects: [`$KV.${names.kvBucket}.>`],
      storage: StorageType.Memory,
      allow_rollup_hdrs: true,
    });
    const err = await rejection(ensureTopology(nc, names));
    expect(err).toBeInstanceOf(TopologyError);
    expect(err.message).toContain("OUTLINE_KV_BUCKET");
    expect(err.message).toContain("storage is memory");
  });

  it("stores a message published twice with the same Nats-Msg-Id once", async () => {
    const names = uniqueNames();
    const { js } = await ensureTopology(nc, names);
    const subject = subjects(names).messageCreated("t-1");
    const first = await js.publish(subject, "{}", { msgID: "m-1" });
    const second = await js.publish(subject, "{}", { msgID: "m-1" });
    expect(first.duplicate).toBe(false);
    expect(second.duplicate).toBe(true);
    expect(second.seq).toBe(first.seq);
    expect((await jsm.streams.info(names.chatStream)).state.messages).toBe(1);
  });

  it("reads a history node back by its subject in one direct get", async () => {
    const names = uniqueNames();
    const { js } = await ensureTopology(nc, names);
    const s = subjects(names);
    await js.publish(s.historyNode("t-2", 1, 3), "old", { msgID: s.historyMsgId("t-2", 1, 3) });
    await js.publish(s.historyNode("t-2", 0, 0), "other", { msgID: s.historyMsgId("t-2", 0, 0) });
    const dup = await js.publish(s.historyNode("t-2", 1, 3), "again", {
      msgID: s.historyMsgId("t-2", 1, 3),
    });
    expect(dup.duplicate).toBe(true);
    const node = await jsm.direct.getMessage(names.historyStream, {
      last_by_subj: s.historyNode("t-2", 1, 3),
    });
    expect(node?.string()).toBe("old");
    expect(s.parseHistory(node?.subject ?? "")).toEqual({ thread: "t-2", level: 1, index: 3 });
  });

  it("keeps dead letters with their reason in headers and the original bytes", async () => {
    const names = uniqueNames();
    const { js } = await ensureTopology(nc, names);
    const original = new Uint8Array([0x7b, 0x0a, 0xff, 0x00, 0x22]);
    const letter = {
      reason: "body is not JSON:\nUnexpected token",
      subject: subjects(names).messageCreated("t-3"),
      data: original,
      seq: 42,
    };
    const first = await publishDeadLetter(js, names, letter);
    const redelivered = await publishDeadLetter(js, names, letter);
    expect(redelivered.duplicate).toBe(true);
    await publishDeadLetter(js, names, { reason: "no sequence", subject: "x", data: original });

    const info = await jsm.streams.info(names.deadStream);
    expect(info.state.messages).toBe(2);
    const stored = await jsm.streams.getMessage(names.deadStream, { seq: first.seq });
    // On its thread's subject; one whose subject names no thread on the subject for those.
    expect(stored?.subject).toBe(subjects(names).deadLetterOf("t-3"));
    const noThread = await jsm.streams.getMessage(names.deadStream, {
      last_by_subj: subjects(names).deadLetterNoThread,
    });
    expect(noThread?.header.get(DEAD_LETTER_HEADERS.reason)).toBe("no sequence");
    expect(Array.from(stored?.data ?? [])).toEqual(Array.from(original));
    expect(stored?.header.get(DEAD_LETTER_HEADERS.reason)).toBe(
      "body is not JSON: Unexpected token",
    );
    expect(stored?.header.get(DEAD_LETTER_HEADERS.subject)).toBe(letter.subject);
    expect(stored?.header.get(DEAD_LETTER_HEADERS.seq)).toBe("42");
    expect(stored?.header.get(DEAD_LETTER_HEADERS.stream)).toBe(names.chatStream);
  });

  it("adds the per-thread subjects to a DEAD stream of the single-subject version, keeping its letters", async () => {
    const names = uniqueNames();
    const s = subjects(names);
    // DEAD as the version before made it: one subject, and a letter on it.
    await jsm.streams.add({
      name: names.deadStream,
      subjects: [names.deadSubject],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      description: "Events outline did not apply: original bytes, reason in headers",
    });
    const old = await jetstream(nc).publish(names.deadSubject, "old bytes", {
      headers: (() => {
        const h = headers();
        h.set(DEAD_LETTER_HEADERS.reason, "an old reason");
        h.set(DEAD_LETTER_HEADERS.subject, s.messageCreated("t-old"));
        return h;
      })(),
    });
    const before = await jsm.streams.info(names.deadStream);

    const { js } = await ensureTopology(nc, names);
    const after = await jsm.streams.info(names.deadStream);
    expect(after.config.subjects).toEqual([names.deadSubject, `${names.deadSubject}.>`]);
    expect(after.created).toBe(before.created);
    expect(after.state.messages).toBe(1);
    const kept = await jsm.streams.getMessage(names.deadStream, { seq: old.seq });
    expect(kept?.subject).toBe(names.deadSubject);
    expect(kept?.string()).toBe("old bytes");
    expect(kept?.header.get(DEAD_LETTER_HEADERS.reason)).toBe("an old reason");

    // New letters go beside it, and a second start changes nothing more.
    const ack = await publishDeadLetter(js, names, {
      reason: "new",
      subject: s.messageCreated("t-old"),
      data: new Uint8Array([1]),
    });
    expect(ack.stream).toBe(names.deadStream);
    await ensureTopology(nc, names);
    expect((await jsm.streams.info(names.deadStream)).config.subjects).toEqual(
      after.config.subjects,
    );
  });

  it("is safe when several processes start at once", async () => {
    const names = uniqueNames();
    const others = await Promise.all(
      [1, 2, 3].map((i) => connectNats({ url: inject("natsUrl"), name: `racer-${i}` })),
    );
    try {
      await Promise.all(others.map((c) => ensureTopology(c, names)));
    } finally {
      await Promise.all(others.map((c) => c.close()));
    }
    expect((await jsm.streams.info(names.historyStream)).config.name).toBe(names.historyStream);
  });
});

describe("connectNats", () => {
  it("names NATS_URL when nothing answers", async () => {
    const err = await rejection(
      connectNats({ url: "nats://127.0.0.1:1", name: "nobody", startupTimeoutMs: 300 }),
    );
    expect(err).toBeInstanceOf(NatsConnectError);
    expect(err.message).toContain("nats://127.0.0.1:1 (NATS_URL)");
  });

  it("does not print credentials from the URL", async () => {
    const err = await rejection(
      connectNats({ url: "nats://me:secret@127.0.0.1:1", name: "nobody", startupTimeoutMs: 0 }),
    );
    expect(err.message).not.toContain("secret");
  });

  it("publishes through the JetStream client after connecting", async () => {
    const names = uniqueNames();
    await ensureTopology(nc, names);
    const ack = await jetstream(nc).publish(subjects(names).threadDeleted("t-4"), "{}");
    expect(ack.stream).toBe(names.chatStream);
  });
});
