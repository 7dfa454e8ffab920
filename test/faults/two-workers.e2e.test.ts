import { Kvm, type KvWatchEntry } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { workerBucketNames } from "../../services/nats/buckets.ts";
import {
  chatMessage,
  publishMessage,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
  type Harness,
} from "../support/thread-worker.ts";
import { openAIEnv, startSlowOpenAI } from "./slow-openai.ts";
import {
  expectMatchesCleanRun,
  faultScope,
  ownHarness,
  spawnWorker,
  startOwnNats,
} from "./support.ts";

// Fault: two worker processes share the durable consumer, so events of one thread reach both.
// Every state write is fenced on the KV revision its writer last saw, so a thread's writes form
// one chain: watching every write to the actor bucket and the snapshot bucket, no thread's state
// may ever go back (a stale worker overwriting a newer one). Then one worker is SIGKILLed and the
// other takes its threads over: everything settles to the clean run.

const scope = faultScope();
const { processes } = scope;
/** Bounds a hang only: on 2 cores at a load average of 20 one step can take over a minute. */
const DEADLINE_MS = 180_000;

interface Write {
  thread: string;
  revision: number;
  /** Log position the write reflects: CHAT sequence, then messages in the outline. */
  seq: number;
  boundary: number;
}

/** Records every write to a bucket as it happens (a watch from now on, updates only). */
async function recordWrites(
  harness: Harness,
  bucket: string,
  position: (value: unknown) => { seq: number; boundary: number },
): Promise<Write[]> {
  const kv = await new Kvm(jetstream(harness.nc)).open(bucket);
  const writes: Write[] = [];
  const watch = await kv.watch({ include: "updates" as never });
  scope.stops.push(() => watch.stop());
  void (async () => {
    for await (const e of watch as AsyncIterable<KvWatchEntry>) {
      if (e.operation !== "PUT") continue;
      writes.push({ thread: e.key, revision: e.revision, ...position(e.json<unknown>()) });
    }
  })();
  return writes;
}

/** Per thread, writes in revision order never move back on the log. */
function backwardWrites(writes: Write[]): string[] {
  const last = new Map<string, Write>();
  const problems: string[] = [];
  for (const w of [...writes].sort((a, b) => a.revision - b.revision)) {
    const before = last.get(w.thread);
    if (before && (w.seq < before.seq || (w.seq === before.seq && w.boundary < before.boundary))) {
      problems.push(
        `${w.thread}: revision ${w.revision} (seq ${w.seq}, boundary ${w.boundary}) after revision ${before.revision} (seq ${before.seq}, boundary ${before.boundary})`,
      );
    }
    last.set(w.thread, w);
  }
  return problems;
}

describe("fault: two workers on the same stream", () => {
  it("no thread's state ever goes back; after one is killed the other takes its threads over", async () => {
    const nats = (scope.nats = await startOwnNats());
    const fake = (scope.fake = await startSlowOpenAI({ kind: "ok", minMs: 10, maxMs: 60 }));
    const h = (scope.h = await ownHarness(nats.url));
    const harness = h;
    // The fight itself is under test: both run on, each naming the other.
    const env = { ...openAIEnv(fake), OUTLINE_ALLOW_SINGLE_PEERS: "1" };
    const a = spawnWorker(nats.url, harness.names, SMALL, env);
    const b = spawnWorker(nats.url, harness.names, SMALL, env);
    processes.push(a, b);
    await Promise.all([a.ready(), b.ready()]);

    const snapshotWrites = await recordWrites(harness, harness.names.kvBucket, (v) => {
      const s = v as OutlineSnapshot;
      return { seq: s.seq, boundary: s.boundary };
    });
    const actorWrites = await recordWrites(
      harness,
      workerBucketNames(harness.names).actors,
      (v) => {
        const r = v as { seen: number; snapshot: { context: { core: { boundary: number } } } };
        return { seq: r.seen, boundary: r.snapshot.context.core.boundary };
      },
    );

    const threads = ["w1", "w2", "w3", "w4", "w5", "w6"];
    const publish = (from: number, to: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = from; i < to; i++) await publishMessage(harness, chatMessage(t, i));
        }),
      );
    await publish(0, 120);
    await waitFor(
      "writes to the snapshot bucket",
      () => new Set(snapshotWrites.map((w) => w.thread)).size === threads.length,
      DEADLINE_MS,
    );
    a.kill("SIGKILL");
    expect((await a.exited).signal).toBe("SIGKILL");
    await publish(120, 200);

    try {
      await waitSettled(harness, threads, DEADLINE_MS);
    } catch (err) {
      // What the survivor was doing says why it did not take over.
      const states = await Promise.all(threads.map((t) => readSnapshot(harness, t)));
      const want = threads.map((t) => harness.log.get(t)?.length);
      throw new Error(
        `${(err as Error).message}\nsnapshots ${JSON.stringify(states.map((x) => [x?.count, x?.seq, x?.pending]))} want counts ${JSON.stringify(want)}\nsurvivor:\n${b.output.slice(-3_000)}`,
      );
    }
    await expectMatchesCleanRun(harness, threads, SMALL);
    expect(backwardWrites(actorWrites), "actor state writes that went back").toEqual([]);
    expect(backwardWrites(snapshotWrites), "snapshot writes that went back").toEqual([]);
    expect(actorWrites.length).toBeGreaterThan(threads.length);
    const lost = (b.output.match(/written by someone else/g) ?? []).length;
    console.log(
      `${actorWrites.length} actor writes, ${snapshotWrites.length} snapshot writes watched; survivor gave up a thread to the other ${lost} time(s)`,
    );
  });
});
