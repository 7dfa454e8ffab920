import { Kvm, KvWatchInclude } from "@nats-io/kv";
import { Empty, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import type { SummaryJob } from "../../shared/jobs.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { findBuilt, isSettled as isSettledCore } from "../../shared/thread.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { SummarizerError } from "../../services/summarizer/errors.ts";
import type { PersistedThread } from "../../services/thread-worker/actor-store.ts";
import { kvStream, kvSubject, workerBucketNames } from "../../services/nats/buckets.ts";
import type { Logger } from "../../services/thread-worker/log.ts";
import { METRIC } from "../../services/thread-worker/metrics.ts";
import { startThreadWorker, type ThreadWorker } from "../../services/thread-worker/worker.ts";
import { expectMatchesCleanRun, faultScope, ownHarness } from "../faults/support.ts";
import {
  chatMessage,
  FakeSummarizer,
  publishMessage,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "../support/thread-worker.ts";
import { mappedNats } from "./instance.ts";

// A thread handed over while its summaries run: the old owner's drain saves a state newer than
// the one stored before (summaries came back, their save was waiting), and the new owner must
// load that one. On an R3 cluster a direct get may be answered by a replica that has not applied
// the drain's save yet (nats-server < 2.12); the new owner's connection here answers the first
// direct get of each thread's actor key with the state stored before the drain, as such a
// replica would. One server with the partition mapping, two in-process partitioned workers.
const scope = faultScope();
const PARTITIONS = 2;

/**
 * A cheap summarizer (no limiter: every job calls at once) whose calls wait until let through:
 * one per thread on demand, or all once open. A waiting call ends when its job is stopped.
 */
class GatedSummarizer extends FakeSummarizer {
  readonly cheap = true;
  #open = false;
  readonly #waiting: { job: SummaryJob; go: () => void }[] = [];

  waitingOf(thread: string): number {
    return this.#waiting.filter((w) => w.job.thread === thread).length;
  }

  override async summarize(job: SummaryJob, signal?: AbortSignal) {
    if (!this.#open) {
      await new Promise<void>((resolve, reject) => {
        const entry = { job, go: resolve };
        this.#waiting.push(entry);
        signal?.addEventListener(
          "abort",
          () => {
            const at = this.#waiting.indexOf(entry);
            if (at >= 0) this.#waiting.splice(at, 1);
            reject(new SummarizerError("ABORTED", "aborted", { terminal: false }));
          },
          { once: true },
        );
      });
    }
    return super.summarize(job, signal);
  }

  /** Lets the oldest waiting call of each thread through; returns their jobs. */
  passOnePerThread(): SummaryJob[] {
    const passed = new Map<string, { job: SummaryJob; go: () => void }>();
    for (const w of this.#waiting) if (!passed.has(w.job.thread)) passed.set(w.job.thread, w);
    for (const w of passed.values()) {
      this.#waiting.splice(this.#waiting.indexOf(w), 1);
      w.go();
    }
    return [...passed.values()].map((w) => w.job);
  }

  open(): void {
    this.#open = true;
    for (const w of this.#waiting.splice(0)) w.go();
  }
}

/** A logger that keeps every warning and error line. */
function recordingLogger(lines: string[]): Logger {
  return { info: () => {}, warn: (m) => lines.push(m), error: (m) => lines.push(m) };
}

/** The thread's actor record as the bucket's leader has it: its revision and `seen`. */
async function storedRecord(h: Harness, thread: string) {
  const bucket = workerBucketNames(h.names).actors;
  const m = await h.jsm.streams.getMessage(kvStream(bucket), {
    last_by_subj: kvSubject(bucket, thread),
  });
  return m ? { revision: m.seq, seen: m.json<{ seen: number }>().seen } : undefined;
}

/**
 * Every thread's snapshot settles, and so does the stored state of those in `stored`: nothing
 * asked of the summarizer is left in it (a snapshot of summaries alone may be written before the
 * state is saved). On a timeout, what the workers warned of.
 */
async function settled(
  h: Harness,
  threads: string[],
  stored: string[],
  lines: string[],
): Promise<void> {
  try {
    await waitSettled(h, threads, 20_000);
    await waitFor("the stored states to settle", async () =>
      (await Promise.all(stored.map((t) => settledOnStore(h, t)))).every(Boolean),
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; the workers said:\n${lines.join("\n")}`);
  }
}

/** Every snapshot of `thread` written from now on, in the order stored. */
async function snapshotWrites(h: Harness, thread: string): Promise<OutlineSnapshot[]> {
  const kv = await new Kvm(h.js).open(h.names.kvBucket);
  const watch = await kv.watch({ key: thread, include: KvWatchInclude.UpdatesOnly });
  const writes: OutlineSnapshot[] = [];
  void (async () => {
    for await (const e of watch) if (e.operation === "PUT") writes.push(e.json<OutlineSnapshot>());
  })();
  scope.stops.push(() => watch.stop());
  return writes;
}

/** Writes that show less of the log than the one before: an earlier seq, or an earlier cut. */
function wentBack(writes: OutlineSnapshot[]): string[] {
  return writes.flatMap((w, i) => {
    const before = writes[i - 1];
    return before && (w.seq < before.seq || (w.seq === before.seq && w.boundary < before.boundary))
      ? [
          `write ${i}: seq ${w.seq} boundary ${w.boundary} after seq ${before.seq} boundary ${before.boundary}`,
        ]
      : [];
  });
}

/** Whether the thread's stored state has nothing asked of the summarizer left in it. */
async function settledOnStore(h: Harness, thread: string): Promise<boolean | undefined> {
  const bucket = workerBucketNames(h.names).actors;
  const m = await h.jsm.streams.getMessage(kvStream(bucket), {
    last_by_subj: kvSubject(bucket, thread),
  });
  const core = m?.json<PersistedThread>().snapshot.context.core;
  return core === undefined ? undefined : isSettledCore(core);
}

/** `nc`'s next direct get of each thread's actor key is answered with `stale`'s reply. */
function lagOnce(nc: NatsConnection, stale: Map<string, Msg>): void {
  const request = nc.request.bind(nc);
  nc.request = (subject, payload, opts) => {
    for (const [key, reply] of stale) {
      if (subject.startsWith("$JS.API.DIRECT.GET.") && subject.endsWith(`.${key}`)) {
        stale.delete(key);
        return Promise.resolve(reply);
      }
    }
    return request(subject, payload, opts);
  };
}

/** `nc`'s first listing of `stream`'s keys fails, as a request timing out on a loaded cluster. */
function failFirstListing(nc: NatsConnection, stream: string): void {
  const request = nc.request.bind(nc);
  let failed = false;
  nc.request = (subject, payload, opts) => {
    const listing =
      subject === `$JS.API.STREAM.INFO.${stream}` &&
      payload instanceof Uint8Array &&
      new TextDecoder().decode(payload).includes("subjects_filter");
    if (listing && !failed) {
      failed = true;
      return Promise.reject(new Error("TIMEOUT (the test's)"));
    }
    return request(subject, payload, opts);
  };
}

describe("a thread handed over with summaries in flight", () => {
  it("is loaded by its new owner as its old owner last saved it, and settles", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    // One thread in each partition: whichever the newcomer takes, one thread moves.
    const ids = Array.from({ length: 20 }, (_, i) => `hr${i}`);
    const threads = [0, 1].map((k) => ids.find((t) => h.s.partitionOf(t) === k) as string);
    const gate = new GatedSummarizer();
    const lines: string[] = [];
    const workers: ThreadWorker[] = [];
    const connections: NatsConnection[] = [];
    const worker = async (extra: { saveDelayMs?: number }, nc?: NatsConnection) => {
      const conn = nc ?? (await connectNats({ url: nats.url, name: "handover-reads" }));
      connections.push(conn);
      const w = await startThreadWorker({
        nc: conn,
        names,
        settings: SMALL,
        summarizer: gate,
        log: recordingLogger(lines),
        snapshotDelayMs: 20,
        ...extra,
      });
      workers.push(w);
      return w;
    };
    try {
      // A summary-only change waits 5 save delays while more summaries run: none before the drain.
      const a = await worker({ saveDelayMs: 60_000 });
      for (let i = 0; i < 14; i++)
        await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
      const last = (t: string) => h.log.get(t)?.at(-1)?.seq;
      await waitFor("every event stored and summaries waiting", async () => {
        for (const t of threads) {
          if ((await storedRecord(h, t))?.seen !== last(t) || gate.waitingOf(t) < 2) return false;
        }
        return true;
      });
      // What a replica one write behind would answer: the state stored now.
      const actors = workerBucketNames(names).actors;
      const stale = new Map<string, Msg>();
      const before = new Map<string, number | undefined>();
      for (const t of threads) {
        const key = kvSubject(actors, t);
        stale.set(key, await h.nc.request(`$JS.API.DIRECT.GET.${kvStream(actors)}.${key}`, Empty));
        before.set(t, (await storedRecord(h, t))?.revision);
      }
      // One summary of each thread comes back (its save waits); the others stay in flight.
      const passed = gate.passOnePerThread();
      expect(passed.map((j) => j.thread).sort()).toEqual([...threads].sort());
      await waitFor("the summaries let through to be applied", () =>
        passed.every((j) => {
          const core = a.registry.peek(j.thread)?.core;
          return core !== undefined && findBuilt(core, j) !== undefined;
        }),
      );
      for (const t of threads) expect((await storedRecord(h, t))?.revision).toBe(before.get(t));

      // A second member joins: the partition it gets is drained (its thread's newer state
      // saved, its summaries stopped) and handed over.
      const nc = await connectNats({ url: nats.url, name: "handover-reads-b" });
      lagOnce(nc, stale);
      // Its first listing of the threads drained busy fails: it must be asked again, or the
      // moved thread, which gets no more events, never finishes its summaries.
      failFirstListing(nc, kvStream(workerBucketNames(names).busy));
      const b = await worker({}, nc);
      await waitFor("the partitions to be split", () => b.membership?.owned().length === 1);
      const moved = threads.filter((t) => b.membership?.owned().includes(h.s.partitionOf(t) ?? -1));
      expect(moved).toHaveLength(1);
      for (const t of moved) {
        expect((await storedRecord(h, t))?.revision, "the drain saved").toBeGreaterThan(
          before.get(t) ?? 0,
        );
      }
      gate.open();
      await settled(h, threads, moved, lines);
      await expectMatchesCleanRun(h, threads, SMALL);
      expect(lines.filter((l) => l.includes("written by someone else"))).toEqual([]);
      expect(lines.join("\n")).toContain("list the busy threads of partitions");
    } finally {
      for (const w of workers) await w.stop().catch(() => {});
      for (const c of connections) await c.close().catch(() => {});
    }
  });

  it("is loaded again by its owner when a late write of its last owner wins the fence", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    const thread = "late-1";
    const gate = new GatedSummarizer();
    const lines: string[] = [];
    const nc = await connectNats({ url: nats.url, name: "handover-reads-late" });
    // Summaries alone are saved 2 s after the last (their snapshot after 20 ms): the late write
    // lands between the two, so the owner has shown summaries it then fails to store.
    const a = await startThreadWorker({
      nc,
      names,
      settings: SMALL,
      summarizer: gate,
      log: recordingLogger(lines),
      snapshotDelayMs: 20,
      saveDelayMs: 2_000,
    });
    const shown = await snapshotWrites(h, thread);
    try {
      for (let i = 0; i < 14; i++) await publishMessage(h, chatMessage(thread, i));
      await waitFor("every event stored and summaries waiting", async () => {
        const stored = await storedRecord(h, thread);
        return stored?.seen === h.log.get(thread)?.at(-1)?.seq && gate.waitingOf(thread) > 0;
      });
      const actors = workerBucketNames(names).actors;
      const kv = await new Kvm(h.js).open(actors);
      const entry = await kv.get(thread);
      gate.open();
      await waitSettled(h, [thread], 20_000);
      expect((await storedRecord(h, thread))?.revision, "summaries not saved yet").toBe(
        entry?.revision,
      );
      // The thread's last owner writes once more (its drain, late): the record as it was, a new
      // revision. The slot's next save meets the fence; the state loaded again is older than the
      // snapshot shown.
      await kv.put(thread, entry?.value ?? new Uint8Array());
      await waitFor("the owner to give the thread up", () =>
        lines.some((l) => l.includes("written by someone else")),
      );
      await settled(h, [thread], [thread], lines);
      await expectMatchesCleanRun(h, [thread], SMALL);
      expect(wentBack(shown), "snapshots that went back").toEqual([]);
    } finally {
      await a.stop().catch(() => {});
      await nc.close().catch(() => {});
    }
  });

  it("is saved once by its drain, whatever asks the slot to save or passivate meanwhile", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    const thread = "drain-1";
    const lines: string[] = [];
    const nc = await connectNats({ url: nats.url, name: "handover-reads-drain" });
    // Summaries alone wait a minute to be saved: the drain finds the thread dirty.
    const a = await startThreadWorker({
      nc,
      names,
      settings: SMALL,
      summarizer: new FakeSummarizer(),
      log: recordingLogger(lines),
      snapshotDelayMs: 20,
      saveDelayMs: 60_000,
    });
    try {
      for (let i = 0; i < 14; i++) await publishMessage(h, chatMessage(thread, i));
      await waitFor("summaries applied and not saved", async () => {
        const core = a.registry.peek(thread)?.core;
        const stored = await storedRecord(h, thread);
        return (
          core !== undefined &&
          isSettledCore(core) &&
          stored?.seen === h.log.get(thread)?.at(-1)?.seq &&
          (await settledOnStore(h, thread)) === false
        );
      });
      // While the drain's save is on its way: what the caught-up check and the idle sweep do.
      const actorKey = kvSubject(workerBucketNames(names).actors, thread);
      let saves = 0;
      const publish = nc.publish.bind(nc);
      nc.publish = (subject, ...rest) => {
        if (subject === actorKey && ++saves === 1) {
          a.registry.saveLingering();
          a.registry.sweep(0, Date.now() + 3_600_000);
        }
        publish(subject, ...rest);
      };
      await a.registry.drainWhere((t) => t === thread);
      // A second loop, had one started, writes within a few turns.
      await new Promise((r) => setTimeout(r, 300));
      expect(saves, "actor state writes of the drain").toBe(1);
      expect(a.metrics.get(METRIC.passivations)).toBe(0);
      expect(await settledOnStore(h, thread)).toBe(true);
    } finally {
      await a.stop().catch(() => {});
      await nc.close().catch(() => {});
    }
  });
  it("leaves the events its drain had not applied to the next owner, which applies each once", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    const thread = "handover-queued";
    const lines: string[] = [];
    const nc = await connectNats({ url: nats.url, name: "handover-queued" });
    // The thread's first load waits until let through: its events queue in its slot meanwhile.
    let letThrough: () => void = () => {};
    const gate = new Promise<void>((r) => (letThrough = r));
    const request = nc.request.bind(nc);
    nc.request = (subject, payload, opts) => {
      const text = payload instanceof Uint8Array ? new TextDecoder().decode(payload) : "";
      if (subject.includes(thread) || text.includes(thread))
        return gate.then(() => request(subject, payload, opts));
      return request(subject, payload, opts);
    };
    const start = (conn: NatsConnection) =>
      startThreadWorker({
        nc: conn,
        names,
        settings: SMALL,
        summarizer: new FakeSummarizer(),
        log: recordingLogger(lines),
      });
    const a = await start(nc);
    let b: ThreadWorker | undefined;
    const nc2 = await connectNats({ url: nats.url, name: "handover-queued-next" });
    try {
      for (let i = 0; i < 10; i++) await publishMessage(h, chatMessage(thread, i));
      await waitFor("the events delivered to the worker", async () => {
        let delivered = 0;
        for await (const c of h.jsm.consumers.list(names.chatStream))
          delivered += c.delivered.consumer_seq;
        return delivered === 10;
      });
      await new Promise((r) => setTimeout(r, 200));
      // Handed over while they wait: none is applied here.
      const drained = a.registry.drainWhere((t) => t === thread);
      letThrough();
      await drained;
      const last = h.log.get(thread)?.at(-1)?.seq ?? 0;
      expect(
        (await storedRecord(h, thread))?.seen ?? 0,
        "the last event the old owner applied",
      ).toBeLessThan(last);
      await a.stop();
      // The next owner reads the partition from the old one's ack floor: each event comes once.
      b = await start(nc2);
      await settled(h, [thread], [thread], lines);
      await expectMatchesCleanRun(h, [thread], SMALL);
    } finally {
      await a.stop().catch(() => {});
      await b?.stop().catch(() => {});
      await nc.close().catch(() => {});
      await nc2.close().catch(() => {});
    }
  });
});
