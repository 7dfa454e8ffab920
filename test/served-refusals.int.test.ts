import { describe, expect, it } from "vitest";
import { ApiError } from "../services/api/api-error.ts";
import { threadViews } from "../services/explorer/thread-view.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import type { Operations } from "../services/api/operations-interface.ts";
import { createReader } from "../services/nats/reader.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import type { Message } from "../shared/events.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  chatMessage,
  publishMessage,
  publishRaw,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

// What the thread worker does not apply is never a message of the thread for a reader: not in a
// prompt, not at a zoom position, not in the explorer's tail, whether the worker has passed it
// yet or not; and once it has, the snapshot's seq shows it passed, so nothing reads it as newer.
// The next valid message takes the position the refused one would have had, and the prompt
// only grows at its end (SPEC §4).

const scope = workerScope();
// Messages of one size: the first cut comes after ~40 of them, the next ~38 later.
const settings: CoreSettings = { ...SMALL, tail: [200, 4_000] };
const encoder = new TextEncoder();
const AGENT = "Ana";

const message = (thread: string, i: number): Message => ({
  ...chatMessage(thread, i),
  text: `${i} ${"x".repeat(400)}`,
});

/** A prompt-builder's views of a thread: one that keeps what it read, one that keeps nothing. */
function builders(h: Harness) {
  const kept = createOperations(createReader(h.nc, h.names));
  const fresh = () =>
    createOperations(createReader(h.nc, h.names, { cacheBytes: 0 }), { promptCacheBytes: 0 });
  const explorer = () => {
    const reader = createReader(h.nc, h.names, { cacheBytes: 0 });
    return threadViews(reader, createOperations(reader, { promptCacheBytes: 0 }), settings);
  };
  return { kept, fresh, explorer };
}

/** The prompt body's messages, as served, without the array's end: a later one extends it. */
async function promptMessages(ops: Operations, thread: string): Promise<string> {
  const body = (await ops.promptBody({ thread, agent: AGENT })).toString();
  return body.slice(0, body.lastIndexOf('],"stats":'));
}

async function zoomError(ops: Operations, thread: string, id: number): Promise<string> {
  const err = await ops.zoom({ thread, id: String(id), n: "1" }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return (err as ApiError).code;
}

async function deadLetters(h: Harness): Promise<number> {
  return (await h.jsm.streams.info(h.names.deadStream)).state.messages;
}

/**
 * Every view of the thread shows `count` messages and ends with `lastId`, whichever builder
 * reads it (and the explorer's tail, unless told), and no text in `never` appears in a prompt.
 */
async function expectServed(
  h: Harness,
  views: ReturnType<typeof builders>,
  thread: string,
  count: number,
  lastId: string,
  never: string[],
  explorer = true,
): Promise<void> {
  for (const ops of [views.kept, views.fresh()]) {
    const reply = await ops.prompt({ thread, agent: AGENT });
    const body = (await ops.promptBody({ thread, agent: AGENT })).toString();
    for (const text of never) expect(body).not.toContain(text);
    expect(JSON.stringify(reply.messages)).toBe(body.slice(12, body.lastIndexOf(',"stats":')));
    const outline = await ops.outline({ thread });
    // The outline's message (once the thread is cut), then every message after it whole.
    const outlined = outline.lines.length > 0 ? 1 : 0;
    expect(outline.boundary + reply.messages.length - outlined).toBe(count);
    const last = await ops.zoom({ thread, id: String(count - 1), n: "1" });
    expect("message" in last && last.message).toMatchObject({ id: lastId, position: count - 1 });
    expect(await zoomError(ops, thread, count)).toBe("ID_PAST_END");
  }
  if (!explorer) return;
  const explored = await views.explorer().thread(thread);
  expect(explored.snapshot.boundary + explored.tail.count).toBe(count);
  const page = await views.explorer().tail(thread, 0, 500);
  expect(page.messages.at(-1)).toMatchObject({ id: lastId, position: count - 1 });
}

/** Waits until the thread's snapshot reflects CHAT up to `seq` (applied or passed over). */
async function waitSnapshotSeq(h: Harness, thread: string, seq: number): Promise<void> {
  await waitFor(`the snapshot of '${thread}' to reflect seq ${seq}`, async () => {
    const snapshot = await readSnapshot(h, thread);
    return (snapshot?.seq ?? 0) >= seq;
  });
}

/** A thread of `n` messages, cut and settled by a worker (still running). */
async function cutThread(
  name: string,
  n: number,
): Promise<{ h: Harness; thread: string; views: ReturnType<typeof builders> }> {
  const { h } = await scope.setup(name);
  const thread = name;
  await scope.start(h, { settings });
  for (let i = 0; i < n; i++) await publishMessage(h, message(thread, i));
  await waitSettled(h, [thread]);
  expect((await readSnapshot(h, thread))?.boundary).toBeGreaterThan(5);
  return { h, thread, views: builders(h) };
}

describe("events the worker refuses are not served", () => {
  it("a body not UTF-8, one naming another thread and one with a bad role: never a message, before or after the worker passes them", async () => {
    const { h, thread, views } = await cutThread("refused", 45);
    const before = await promptMessages(views.kept, thread);
    const boundary = (await readSnapshot(h, thread))?.boundary;
    await expectServed(h, views, thread, 45, `${thread}-m44`, []);

    // The worker stopped: the refused bodies are stored past the snapshot, not passed yet.
    await scope.stopWorkers();
    const latin1 = encoder.encode(JSON.stringify({ ...message(thread, 45), text: "caf@" }));
    latin1[latin1.indexOf(0x40)] = 0xe9; // "café" in Latin-1: not UTF-8
    const wrongThread = { ...message(`${thread}-other`, 46), text: "sent to the wrong thread" };
    const badRole = { ...message(thread, 47), role: "robot", text: "a robot speaks" };
    const subject = h.s.messageCreated(thread);
    await publishRaw(h, subject, latin1);
    await publishRaw(h, subject, encoder.encode(JSON.stringify(wrongThread)));
    const lastRefused = await publishRaw(h, subject, encoder.encode(JSON.stringify(badRole)));
    const never = ["caf\ufffd", "caf\\ufffd", wrongThread.text, badRole.text];

    await expectServed(h, views, thread, 45, `${thread}-m44`, never);
    expect(await promptMessages(views.kept, thread)).toBe(before);

    // The worker dead-letters the three, and its snapshot shows them passed.
    const worker = await scope.start(h, { settings });
    await waitFor("three dead letters", async () => (await deadLetters(h)) === 3);
    await waitSnapshotSeq(h, thread, lastRefused);
    expect(worker.metrics.get(METRIC.deadLetters)).toBe(3);
    await expectServed(h, views, thread, 45, `${thread}-m44`, never);
    expect(await promptMessages(views.kept, thread)).toBe(before);
    const reply = await views.fresh().prompt({ thread, agent: AGENT });
    expect(reply.stats.newerThanSnapshot).toBe(0);
    expect(reply.stats.snapshotSeq).toBe(lastRefused);

    // The next valid message is message 45, at the end of the prompt.
    await publishMessage(h, message(thread, 45));
    await expectServed(h, views, thread, 46, `${thread}-m45`, never);
    const after = await promptMessages(views.kept, thread);
    expect(after.startsWith(before)).toBe(true);
    expect(after.length).toBeGreaterThan(before.length);
    expect(await promptMessages(views.fresh(), thread)).toBe(after);
    await waitSettled(h, [thread]);
    expect((await readSnapshot(h, thread))?.boundary).toBe(boundary); // no cut in between
    expect(await promptMessages(views.kept, thread)).toBe(after);
  });
});

describe("a message id published again after it left the tail, past the duplicate window", () => {
  it("is never served, same content or not: not before the worker passes it, not after", async () => {
    const { h, thread, views } = await cutThread("again", 45);
    const before = await promptMessages(views.kept, thread);
    const boundary = (await readSnapshot(h, thread))?.boundary;

    // The worker stopped: the copies are stored past the snapshot, not passed yet. Another
    // Nats-Msg-Id, as a platform retrying after the window would: the stream keeps both.
    await scope.stopWorkers();
    const same = await publishMessage(h, message(thread, 3), { msgID: "again-3" });
    const edited = { ...message(thread, 4), text: "an edit the contract has no event for" };
    const conflict = await publishMessage(h, edited, { msgID: "again-4" });
    expect(same.duplicate || conflict.duplicate).toBe(false);
    // Not the explorer's tail: it lists what is stored past the snapshot, deduplicated by the
    // snapshot's tail alone, until the worker passes it (docs/reliability.md, known limits).
    await expectServed(h, views, thread, 45, `${thread}-m44`, [edited.text], false);
    expect(await promptMessages(views.kept, thread)).toBe(before);

    const worker = await scope.start(h, { settings });
    await waitFor(
      "the conflicting copy to be dead-lettered",
      async () => (await deadLetters(h)) === 1,
    );
    await waitSnapshotSeq(h, thread, conflict.seq);
    expect(worker.metrics.get(METRIC.duplicates, { why: "id" })).toBe(1);
    await expectServed(h, views, thread, 45, `${thread}-m44`, [edited.text]);
    expect(await promptMessages(views.kept, thread)).toBe(before);
    const reply = await views.fresh().prompt({ thread, agent: AGENT });
    expect(reply.stats.newerThanSnapshot).toBe(0);

    await publishMessage(h, message(thread, 45));
    await expectServed(h, views, thread, 46, `${thread}-m45`, [edited.text]);
    const after = await promptMessages(views.kept, thread);
    expect(after.startsWith(before)).toBe(true);
    await waitSettled(h, [thread]);
    expect((await readSnapshot(h, thread))?.boundary).toBe(boundary);
  });

  it("a thread whose tail is all of it: a copy of a tail message's id is left out by the tail", async () => {
    const { h } = await scope.setup("young");
    const thread = "young";
    await scope.start(h, { settings });
    for (let i = 0; i < 5; i++) await publishMessage(h, message(thread, i));
    await waitSettled(h, [thread]);
    const views = builders(h);
    expect((await readSnapshot(h, thread))?.boundary).toBe(0);
    await scope.stopWorkers();
    await publishMessage(h, message(thread, 1), { msgID: "again-1" });
    await expectServed(h, views, thread, 5, `${thread}-m4`, []);
  });
});
