import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { DEAD_LETTER_HEADERS } from "../services/nats/topology.ts";
import { idKey } from "../services/nats/id-index.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import { workerMetricsSubject } from "../services/thread-worker/metrics-endpoint.ts";
import type { ThreadWorker, ThreadWorkerOptions } from "../services/thread-worker/worker.ts";
import {
  chatMessage,
  countOn,
  expectedSnapshot,
  FakeGroupSummarizer,
  FakeSummarizer,
  publishMessage,
  publishRaw,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
const connect = (name: string) => scope.connect(name);

async function setup(): Promise<Harness> {
  return (await scope.setup("thread-worker-test")).h;
}

/** A worker on `h` (on `nc` when given: another connection, as another process would have). */
function start(
  h: Harness,
  extra: Partial<ThreadWorkerOptions> = {},
  nc?: NatsConnection,
): Promise<ThreadWorker> {
  return scope.start(h, nc ? { ...extra, nc } : extra);
}

async function expectMatchesCore(h: Harness, threads: string[]): Promise<void> {
  for (const thread of threads) {
    const actual = await readSnapshot(h, thread);
    expect(actual, `snapshot of ${thread}`).toEqual(await expectedSnapshot(h, thread, SMALL));
  }
}

/** Waits until the consumer has delivered every event and had each acknowledged. */
async function waitAllAcknowledged(h: Harness, timeoutMs: number): Promise<void> {
  await waitFor(
    "every event to be delivered and acknowledged",
    async () => {
      const info = await h.jsm.consumers.info(h.names.chatStream, h.names.workerDurable);
      return info.num_ack_pending === 0 && info.num_pending === 0;
    },
    timeoutMs,
  );
}

/** Publishes messages `from`…`to - 1` of each thread, interleaved as a platform would. */
async function publishRange(h: Harness, threads: string[], from: number, to: number) {
  for (let i = from; i < to; i++) {
    await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
  }
}

describe("thread worker", () => {
  it("applies 500 messages on 4 threads: each KV snapshot equals the pure core on the same log and HISTORY's summaries", async () => {
    const h = await setup();
    const summarizer = new FakeSummarizer({ failEvery: 7 });
    const worker = await start(h, {
      summarizer,
      idleMs: 300,
      jobTiming: { retryBaseMs: 5, retryCapMs: 20 },
    });
    const threads = ["alpha", "beta", "gamma", "delta"];
    await publishRange(h, threads, 0, 125);
    await waitSettled(h, threads);
    await expectMatchesCore(h, threads);

    const snapshot = await readSnapshot(h, "alpha");
    expect(snapshot?.count).toBe(125);
    expect(snapshot?.boundary).toBeGreaterThan(100);
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(500);
    expect(worker.metrics.get(METRIC.cuts)).toBeGreaterThan(40);
    expect(worker.metrics.get(METRIC.merges)).toBeGreaterThan(0);
    expect(worker.metrics.get(METRIC.summaryRetries)).toBeGreaterThan(0);
    expect(worker.metrics.get(METRIC.summaries, { kind: "leaf", source: "model" })).toBeGreaterThan(
      0,
    );
    expect(worker.metrics.get(METRIC.summaries, { kind: "leaf", source: "free" })).toBeGreaterThan(
      0,
    );

    // Served over NATS as Prometheus text.
    const reply = await h.nc.request(workerMetricsSubject(h.names), "", { timeout: 5_000 });
    const text = reply.string();
    expect(text).toContain(`${METRIC.events}{kind="message"} 500`);
    expect(text).toMatch(new RegExp(`${METRIC.lag} 0\\n`));
    expect(text).toMatch(/outline_worker_summarizer_tokens_total\{type="input"\} [1-9]/);

    // Idle actors leave memory; the next message rehydrates them (tail texts read back from CHAT).
    await waitFor("idle actors to be passivated", () => worker.registry.size === 0, 10_000);
    expect(worker.metrics.get(METRIC.passivations)).toBe(4);
    await publishRange(h, threads, 125, 130);
    await waitSettled(h, threads);
    expect(worker.metrics.get(METRIC.rehydrations)).toBe(4);
    await expectMatchesCore(h, threads);
  });

  it("dead-letters malformed events with their reason and original bytes; the thread goes on", async () => {
    const h = await setup();
    await start(h);
    await publishMessage(h, chatMessage("t1", 0));
    const notJson = new TextEncoder().encode("{not json");
    const noAuthor = { ...chatMessage("t1", 1), from: undefined };
    const wrongThread = chatMessage("other", 2);
    const badDelete = { thread: "t1", at: "yesterday" };
    const seqs = [
      await publishRaw(h, h.s.messageCreated("t1"), notJson),
      await publishRaw(
        h,
        h.s.messageCreated("t1"),
        new TextEncoder().encode(JSON.stringify(noAuthor)),
      ),
      await publishRaw(
        h,
        h.s.messageCreated("t1"),
        new TextEncoder().encode(JSON.stringify(wrongThread)),
      ),
      await publishRaw(
        h,
        h.s.threadDeleted("t1"),
        new TextEncoder().encode(JSON.stringify(badDelete)),
      ),
    ];
    for (let i = 3; i < 20; i++) await publishMessage(h, chatMessage("t1", i));
    await waitSettled(h, ["t1"]);
    await expectMatchesCore(h, ["t1"]);

    const dead = await h.jsm.streams.info(h.names.deadStream);
    expect(dead.state.messages).toBe(4);
    const reasons: Record<number, string> = {};
    const bodies: Record<number, Uint8Array> = {};
    for (let seq = dead.state.first_seq; seq <= dead.state.last_seq; seq++) {
      const m = await h.jsm.streams.getMessage(h.names.deadStream, { seq });
      const source = Number(m?.header.get(DEAD_LETTER_HEADERS.seq));
      reasons[source] = m?.header.get(DEAD_LETTER_HEADERS.reason) ?? "";
      bodies[source] = m?.data ?? new Uint8Array();
    }
    const [s0, s1, s2, s3] = seqs as [number, number, number, number];
    expect(reasons[s0]).toMatch(/body is UTF-8 but not JSON/);
    expect(bodies[s0]).toEqual(notJson);
    expect(reasons[s1]).toMatch(/from/);
    expect(reasons[s2]).toMatch(/names thread 'other'.*thread 't1'/);
    expect(reasons[s3]).toMatch(/thread.deleted body does not match.*at/);
    // The invalid delete did not delete anything.
    expect((await readSnapshot(h, "t1"))?.count).toBe(18);
  });

  it("applies a message id once: same Nats-Msg-Id, a new Nats-Msg-Id, and long after it left the tail", async () => {
    const h = await setup();
    const worker = await start(h);
    const first = chatMessage("dup", 0);
    await publishMessage(h, first);
    const again = await publishMessage(h, first);
    expect(again.duplicate).toBe(true); // the stream's window
    for (let i = 1; i < 40; i++) await publishMessage(h, chatMessage("dup", i));
    // Past the window, as the platform would after 2 minutes: another Nats-Msg-Id, same id.
    await publishMessage(h, first, { msgID: "republished-0" });
    await publishMessage(h, chatMessage("dup", 39), { msgID: "republished-39" });
    await publishMessage(h, chatMessage("dup", 40));
    await waitSettled(h, ["dup"]);
    await expectMatchesCore(h, ["dup"]);
    const snapshot = await readSnapshot(h, "dup");
    expect(snapshot?.count).toBe(41);
    expect(snapshot?.boundary).toBeGreaterThan(1); // message 0 left the tail long ago
    expect(worker.metrics.get(METRIC.duplicates, { why: "id" })).toBe(2);
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(41);
  });

  it("thread.deleted leaves nothing behind, and later messages are dead-lettered", async () => {
    const h = await setup();
    const worker = await start(h);
    for (let i = 0; i < 60; i++) {
      await publishMessage(h, chatMessage("gone", i));
      await publishMessage(h, chatMessage("kept", i));
    }
    await waitSettled(h, ["gone", "kept"]);
    expect(await countOn(h, h.names.historyStream, h.s.threadHistory("gone"))).toBeGreaterThan(0);

    const deleteSeq = await publishRaw(
      h,
      h.s.threadDeleted("gone"),
      new TextEncoder().encode(JSON.stringify({ thread: "gone", at: "2026-02-01T00:00:00Z" })),
    );
    await waitFor(
      "the snapshot to be erased",
      async () => (await readSnapshot(h, "gone")) === null,
    );
    await waitFor(
      "CHAT to be purged",
      async () => (await countOn(h, h.names.chatStream, h.s.threadChat("gone"))) === 0,
    );
    expect(await countOn(h, h.names.historyStream, h.s.threadHistory("gone"))).toBe(0);
    const ids = `$KV.${worker.buckets.names.ids}.gone.>`;
    expect(await countOn(h, `KV_${worker.buckets.names.ids}`, ids)).toBe(0);
    expect(await worker.buckets.ids.get(idKey("gone", "gone-m3"))).toBeNull();
    expect(deleteSeq).toBeGreaterThan(0);

    // The other thread is untouched.
    await expectMatchesCore(h, ["kept"]);

    const late = chatMessage("gone", 61);
    const lateSeq = (await publishMessage(h, late, { record: false })).seq;
    await waitFor("the late message to be dead-lettered", async () => {
      const info = await h.jsm.streams.info(h.names.deadStream);
      return info.state.messages === 1;
    });
    const letter = await h.jsm.streams.getMessage(h.names.deadStream, {
      last_by_subj: h.s.deadLetterOf("gone"),
    });
    expect(letter?.header.get(DEAD_LETTER_HEADERS.reason)).toMatch(/^thread deleted/);
    expect(Number(letter?.header.get(DEAD_LETTER_HEADERS.seq))).toBe(lateSeq);
    await waitFor(
      "the late message to leave CHAT",
      async () => (await countOn(h, h.names.chatStream, h.s.threadChat("gone"))) === 0,
    );
    expect(await readSnapshot(h, "gone")).toBeNull();

    // A second thread.deleted is a duplicate: counted, neither dead-lettered nor erased again.
    await publishRaw(
      h,
      h.s.threadDeleted("gone"),
      new TextEncoder().encode(JSON.stringify({ thread: "gone", at: "2026-02-02T00:00:00Z" })),
    );
    await waitFor(
      "the second thread.deleted to be counted a duplicate",
      () => worker.metrics.get(METRIC.duplicates, { why: "deleted" }) === 1,
    );
    expect(worker.metrics.get(METRIC.events, { kind: "deleted" })).toBe(1);
    expect((await h.jsm.streams.info(h.names.deadStream)).state.messages).toBe(1);
  });

  it("thread.deleted erases the thread's dead letters; a later event's, another thread's and one naming no thread stay", async () => {
    const h = await setup();
    await start(h);
    const bad = new TextEncoder().encode("not json");
    for (let i = 0; i < 3; i++) {
      await publishMessage(h, chatMessage("doomed", i));
      await publishMessage(h, chatMessage("spared", i));
    }
    const doomedBad = await publishRaw(h, h.s.messageCreated("doomed"), bad);
    const sparedBad = await publishRaw(h, h.s.messageCreated("spared"), bad);
    const nowhereBad = await publishRaw(h, `${h.names.chatPrefix}.café.message.created`, bad);
    await waitFor(
      "three dead letters",
      async () => (await h.jsm.streams.info(h.names.deadStream)).state.messages === 3,
    );
    await waitSettled(h, ["doomed", "spared"]);

    await publishRaw(
      h,
      h.s.threadDeleted("doomed"),
      new TextEncoder().encode(JSON.stringify({ thread: "doomed", at: "2026-02-01T00:00:00Z" })),
    );
    // Sent after the delete: its letter tells the sender the id is taken, and stays (one taken
    // in the delete's own burst, refused before the erase runs: test/bad-input.int.test.ts).
    const late = (await publishMessage(h, chatMessage("doomed", 9), { record: false })).seq;
    // The snapshot goes last: once it is gone, so are the dead letters.
    await waitFor(
      "the snapshot to be erased",
      async () => (await readSnapshot(h, "doomed")) === null,
    );
    await waitFor(
      "the late message's letter",
      async () => (await countOn(h, h.names.deadStream, h.s.deadLetterOf("doomed"))) === 1,
    );

    const dead = await h.jsm.streams.info(h.names.deadStream);
    expect(dead.state.messages).toBe(3);
    const left: { subject: string; from: string; seq: number }[] = [];
    for (let seq = dead.state.first_seq; seq <= dead.state.last_seq; seq++) {
      const m = await h.jsm.streams.getMessage(h.names.deadStream, { seq }).catch(() => null);
      if (!m) continue;
      left.push({
        subject: m.subject,
        from: m.header.get(DEAD_LETTER_HEADERS.subject),
        seq: Number(m.header.get(DEAD_LETTER_HEADERS.seq)),
      });
    }
    expect(left.map((l) => l.seq).sort((a, b) => a - b)).toEqual([sparedBad, nowhereBad, late]);
    expect(left.some((l) => l.seq === doomedBad)).toBe(false);
    expect(left.filter((l) => l.from.includes("doomed"))).toEqual([
      { subject: h.s.deadLetterOf("doomed"), from: h.s.messageCreated("doomed"), seq: late },
    ]);
    expect(left).toContainEqual({
      subject: h.s.deadLetterOf("spared"),
      from: h.s.messageCreated("spared"),
      seq: sparedBad,
    });
    expect(left).toContainEqual(
      expect.objectContaining({ subject: h.s.deadLetterNoThread, seq: nowhereBad }),
    );
    await expectMatchesCore(h, ["spared"]);
  });

  it("a crashed worker's successor ends in the same snapshots, no message applied twice", async () => {
    const h = await setup();
    const threads = ["c1", "c2", "c3"];
    const ncA = await connect("worker-a");
    const workerA = await start(h, { ackWaitMs: 1_500 }, ncA);
    // Half first, until A has stored every thread (a snapshot shows only what a stored state
    // holds): on a fast host A applied 120 messages before its first save, crashed with nothing
    // stored, and B had nothing to rehydrate (a CI run, 2026-12-02).
    await publishRange(h, threads, 0, 75);
    await waitFor(
      "worker A to store the first half",
      async () =>
        (await Promise.all(threads.map((t) => readSnapshot(h, t)))).every(
          (snapshot) => (snapshot?.count ?? 0) >= 75,
        ),
      30_000,
    );
    const publishing = publishRange(h, threads, 75, 150);
    await waitFor(
      "worker A to be mid-stream in the second half",
      () => workerA.metrics.get(METRIC.events, { kind: "message" }) >= 255,
      30_000,
    );
    // A crash: no drain, no final write, the connection just goes.
    workerA.abandon();
    scope.forget(workerA);
    await ncA.close();
    await publishing;

    const workerB = await start(h, { ackWaitMs: 1_500 });
    await waitSettled(h, threads);
    await expectMatchesCore(h, threads);
    for (const t of threads) expect((await readSnapshot(h, t))?.count).toBe(150);
    // B saw what A had not stored, once: a redelivery after the ack wait is skipped by sequence.
    await waitAllAcknowledged(h, 20_000);
    await expectMatchesCore(h, threads);
    expect(workerB.metrics.get(METRIC.rehydrations)).toBeGreaterThan(0);
  });

  it("backpressure: a backlog past backlogLimit waits in the stream, the stored tail stays bounded, nothing is lost", async () => {
    const h = await setup();
    // A slow model: summaries lag far behind a burst of 600 messages.
    class SlowSummarizer extends FakeSummarizer {
      override async summarize(
        job: Parameters<FakeSummarizer["summarize"]>[0],
        signal?: AbortSignal,
      ) {
        await new Promise((r) => setTimeout(r, 15));
        return super.summarize(job, signal);
      }
    }
    const worker = await start(h, {
      summarizer: new SlowSummarizer(),
      backlogLimit: 40,
      maxBurst: 10,
    });
    const thread = "backlog";
    const messages = Array.from({ length: 600 }, (_, i) => chatMessage(thread, i));
    await Promise.all(messages.map((m) => publishMessage(h, m)));
    let largest = 0;
    await waitFor(
      "the backlog to settle",
      async () => {
        largest = Math.max(largest, (await readSnapshot(h, thread))?.tail.length ?? 0);
        return (
          await Promise.all([thread].map(async (t) => (await readSnapshot(h, t))?.count === 600))
        ).every(Boolean);
      },
      120_000,
    );
    await waitSettled(h, [thread], 120_000);
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThanOrEqual(40 + 10);
    expect(await worker.renderMetrics()).toMatch(/outline_worker_backlog_holds_total [1-9]/);
    await expectMatchesCore(h, [thread]);
  });

  it("a thread stored with summaries outstanding is woken at start, with no new event", async () => {
    const h = await setup();
    const threads = ["w1", "w2"];
    // Worker A's model never answers: every message is stored, every summary stays outstanding.
    const silent = new FakeSummarizer();
    silent.summarize = (_job, signal) =>
      new Promise((_, reject) =>
        signal?.addEventListener("abort", () => reject(new Error("aborted"))),
      );
    const ncA = await connect("worker-a");
    const workerA = await start(h, { summarizer: silent }, ncA);
    await publishRange(h, threads, 0, 40);
    await waitFor("worker A to store and acknowledge every message", async () => {
      const info = await h.jsm.consumers.info(h.names.chatStream, h.names.workerDurable);
      return info.num_ack_pending === 0 && info.num_pending === 0;
    });
    const stuck = await readSnapshot(h, "w1");
    expect(stuck?.count).toBe(40);
    expect(stuck?.pending.jobs).toBeGreaterThan(0);
    workerA.abandon();
    scope.forget(workerA);
    await ncA.close();

    await start(h);
    await waitSettled(h, threads);
    await expectMatchesCore(h, threads);
    // Unlisted at the next save once settled (a state changed by summaries alone is saved late).
    await waitFor(
      "the busy index to empty",
      async () =>
        (await countOn(h, `KV_${h.names.kvBucket}-busy`, `$KV.${h.names.kvBucket}-busy.>`)) === 0,
      5_000,
    );
  });
});

// What the worker does to go fast, and that none of it weakens a guarantee: no gap read while
// this worker sees every delivery, gap reads again when it does not, and saves coalesced under a
// backlog with every event acknowledged only once a stored state includes it.
describe("thread worker throughput", () => {
  it("one worker seeing every delivery reads no gap from CHAT (skipGapReads), and ends equal to the pure core", async () => {
    const h = await setup();
    const worker = await start(h, { skipGapReads: true });
    const threads = ["g1", "g2", "g3", "g4", "g5"];
    await publishRange(h, threads, 0, 40);
    await waitSettled(h, threads);
    await expectMatchesCore(h, threads);
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(200);
    // Interleaved threads: every event but each thread's first follows a hole in the stream.
    expect(worker.metrics.get(METRIC.gapReadsSkipped)).toBeGreaterThan(100);
    expect(worker.metrics.get(METRIC.gapReads)).toBe(0);
  });

  it("two workers on one consumer: each reads the gaps the other's deliveries leave, no event lost or applied twice", async () => {
    const h = await setup();
    const a = await start(h, { ackWaitMs: 2_000, skipGapReads: true }, await connect("worker-a"));
    const b = await start(h, { ackWaitMs: 2_000, skipGapReads: true }, await connect("worker-b"));
    const threads = ["s1", "s2", "s3"];
    await publishRange(h, threads, 0, 60);
    await waitSettled(h, threads);
    await waitAllAcknowledged(h, 30_000);
    await expectMatchesCore(h, threads);
    for (const t of threads) expect((await readSnapshot(h, t))?.count).toBe(60);
    const routed = (w: ThreadWorker) =>
      w.metrics.get(METRIC.events, { kind: "message" }) +
      w.metrics.get(METRIC.duplicates, { why: "seq" }) +
      w.metrics.get(METRIC.gapReadsSkipped);
    // Both took deliveries: neither saw the consumer's deliveries without holes, so neither
    // skipped every gap read.
    if (routed(a) > 0 && routed(b) > 0) {
      expect(a.metrics.get(METRIC.gapReads) + b.metrics.get(METRIC.gapReads)).toBeGreaterThan(0);
    }
  });

  it("a slot that fails drops what it was given: every other slot reads CHAT for its gap again", async () => {
    const h = await setup();
    const worker = await start(h, { skipGapReads: true });
    for (let i = 0; i < 2; i++) await publishMessage(h, chatMessage("good", i));
    await waitSettled(h, ["good"]);
    expect(worker.metrics.get(METRIC.gapReads)).toBe(0);
    // A stored state that cannot be read: the thread's slot fails on its first event.
    await worker.buckets.actors.put("broken", "not json");
    await publishMessage(h, chatMessage("broken", 0), { record: false });
    await waitFor(
      "the broken thread's slot to fail",
      () => worker.metrics.get(METRIC.threadErrors) > 0,
    );
    await publishMessage(h, chatMessage("other", 0));
    await publishMessage(h, chatMessage("good", 2));
    await waitFor("good's third message", async () => (await readSnapshot(h, "good"))?.count === 3);
    expect(worker.metrics.get(METRIC.gapReads)).toBeGreaterThan(0);
    await waitSettled(h, ["good", "other"]);
    await expectMatchesCore(h, ["good", "other"]);
  });

  it("under a backlog one save stores many events, and no event is acknowledged before a stored state includes it", async () => {
    const h = await setup();
    const thread = "linger";
    // Published before the worker starts: it begins behind, with 300 events to catch up on.
    for (let i = 0; i < 300; i++) await publishMessage(h, chatMessage(thread, i));
    // At most 60 unacknowledged: each batch of deliveries waits for a save (1 s linger) before
    // the next comes, so events sit applied and not yet stored while the test watches. The
    // linger is not shortened near the limit (saveAtHeld: never), or there would be no wait.
    const worker = await start(h, {
      saveLingerMs: 1_000,
      maxAckPending: 60,
      saveAtHeld: Number.POSITIVE_INFINITY,
    });
    let checks = 0;
    await waitFor(
      "the backlog to be applied, saved and acknowledged",
      async () => {
        // Read the ack floor first: the stored state only grows, so a later read covers it.
        const info = await h.jsm.consumers.info(h.names.chatStream, h.names.workerDurable);
        const snapshot = await readSnapshot(h, thread);
        const stored = await worker.buckets.actors.get(thread);
        const seen = stored?.operation === "PUT" ? stored.json<{ seen: number }>().seen : 0;
        expect(info.ack_floor.stream_seq).toBeLessThanOrEqual(seen);
        // The outline never shows an event before the state holding it is stored.
        expect(snapshot?.seq ?? 0).toBeLessThanOrEqual(seen);
        checks++;
        return snapshot?.count === 300 && info.num_ack_pending === 0 && info.num_pending === 0;
      },
      30_000,
    );
    expect(checks).toBeGreaterThan(0);
    await waitSettled(h, [thread]);
    await expectMatchesCore(h, [thread]);
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(300);
    // Coalesced: far fewer state saves than events (each save stores many of them).
    expect(worker.metrics.get(METRIC.stateSaves)).toBeLessThan(30);
    expect(checks).toBeGreaterThan(10); // watched across several lingers
  });

  it("a thread whose tail still holds all of it checks ids there; its first cut records them all in the id index; a message id still applies once", async () => {
    const h = await setup();
    // Messages of one size: the first cut comes at a known count (tail cost past 4,000 tokens).
    const settings = { ...SMALL, tail: [2_000, 4_000] as [number, number] };
    const worker = await start(h, { settings });
    const thread = "young";
    const message = (i: number) => ({ ...chatMessage(thread, i), text: `${i} ${"x".repeat(400)}` });
    const idKeys = () =>
      countOn(h, `KV_${worker.buckets.names.ids}`, `$KV.${worker.buckets.names.ids}.${thread}.>`);
    for (let i = 0; i < 10; i++) await publishMessage(h, message(i));
    // Past the stream's duplicate window, as a platform could: another Nats-Msg-Id, same id.
    await publishMessage(h, message(3), { msgID: "again-3" });
    await publishMessage(h, message(10));
    await waitFor("11 messages applied", async () => (await readSnapshot(h, thread))?.count === 11);
    expect((await readSnapshot(h, thread))?.boundary).toBe(0);
    expect(worker.metrics.get(METRIC.duplicates, { why: "id" })).toBe(1);
    expect(await idKeys()).toBe(0); // nothing left the tail: no index write yet

    for (let i = 11; i < 60; i++) await publishMessage(h, message(i));
    await waitSettled(h, [thread]);
    const afterCut = await readSnapshot(h, thread);
    expect(afterCut?.boundary).toBeGreaterThan(3); // message 3 is out of the tail now
    expect(await idKeys()).toBe(60); // every message's id, once

    await publishMessage(h, message(3), { msgID: "again-3-later" });
    await publishMessage(h, message(60));
    await waitFor("61 messages applied", async () => (await readSnapshot(h, thread))?.count === 61);
    await waitSettled(h, [thread]);
    expect(worker.metrics.get(METRIC.duplicates, { why: "id" })).toBe(2);
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(61);
    expect(await readSnapshot(h, thread)).toEqual(await expectedSnapshot(h, thread, settings));
  });

  it("summarizer groups: due nodes go several to a call; a node the call missed, or a failed call, is built alone; the outline equals the pure core", async () => {
    const h = await setup();
    const settings = { ...SMALL, group: 4 };
    const summarizer = new FakeGroupSummarizer({ dropEvery: 9, failGroupEvery: 5 });
    const worker = await start(h, {
      settings,
      summarizer,
      jobTiming: { retryBaseMs: 5, retryCapMs: 20 },
    });
    const threads = ["g-one", "g-two"];
    await publishRange(h, threads, 0, 150);
    await waitSettled(h, threads);
    for (const thread of threads) {
      const actual = await readSnapshot(h, thread);
      const expected = await expectedSnapshot(h, thread, settings);
      // Nodes still held for their group: fewer than a group, nothing waiting on them.
      expect(actual?.pending.held ?? 0).toBeLessThan(settings.group);
      expect(actual).toEqual(expected);
      expect(actual?.boundary).toBeGreaterThan(100);
    }
    // These settings cut every few messages, so many groups go before they are full; still more
    // than two nodes a call on average.
    expect(summarizer.groupCalls).toBeGreaterThan(10);
    expect(summarizer.grouped / summarizer.groupCalls).toBeGreaterThan(2);
    const byGroup = ["leaf", "merge"].map((kind) =>
      worker.metrics.get(METRIC.summaries, { kind, source: "group" }),
    );
    expect(byGroup[0]).toBeGreaterThan(0);
    expect(byGroup[1]).toBeGreaterThan(0);
    // Missed lines and failed groups were built one by one.
    expect(summarizer.calls).toBeGreaterThan(0);
  });

  it("refuses a save linger that would leave events unacknowledged near the ack wait", async () => {
    const h = await setup();
    await expect(start(h, { saveLingerMs: 5_000, ackWaitMs: 10_000 })).rejects.toThrow(
      /saveLingerMs 5000 is not between 0 and a tenth of the ack wait/,
    );
  });
});
