import { describe, expect, it } from "vitest";
import {
  chatMessage,
  isSettled,
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

// Fault: the worker is SIGKILLed 5 times at random moments of a summarization storm (small
// settings, a slow model answering in 40–200 ms, messages still arriving). Nothing may be lost,
// nothing applied twice, no node built twice; the last worker settles every thread to exactly
// the pure core's state on the same log and the summaries HISTORY holds.

const scope = faultScope();
// Groups of 4 nodes a summarizer call: kills also land between a group's call and its nodes.
const settings = { ...SMALL, group: 4 };
const { processes } = scope;

async function applied(harness: Harness, threads: string[]): Promise<number> {
  const snapshots = await Promise.all(threads.map((t) => readSnapshot(harness, t)));
  return snapshots.reduce((sum, s) => sum + (s?.count ?? 0), 0);
}

describe("fault: SIGKILL during a summarization storm", () => {
  it("5 kills at random moments; the restarted worker settles every thread to the clean run", async () => {
    const nats = (scope.nats = await startOwnNats());
    const fake = (scope.fake = await startSlowOpenAI({ kind: "ok", minMs: 40, maxMs: 200 }));
    const h = (scope.h = await ownHarness(nats.url));
    const harness = h;
    const threads = ["s1", "s2", "s3", "s4"];
    // Messages arrive in 5 waves, one per worker life, so kills land while events are being
    // applied too, not only while summaries are in flight.
    const wave = (k: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = k * 50; i < (k + 1) * 50; i++)
            await publishMessage(harness, chatMessage(t, i));
        }),
      );
    const waves: Promise<unknown>[] = [];
    const env = openAIEnv(fake);
    const kills: string[] = [];
    for (let k = 0; k < 5; k++) {
      const worker = spawnWorker(nats.url, harness.names, settings, env);
      processes.push(worker);
      await worker.ready();
      waves.push(wave(k));
      // A random moment: after 3 to 40 more summarizer calls reach the model.
      const target = fake.counts.ok + 3 + Math.floor(Math.random() * 38);
      await waitFor(`summarizer call ${target}`, () => fake.counts.ok >= target, 60_000);
      worker.kill("SIGKILL");
      expect((await worker.exited).signal).toBe("SIGKILL");
      kills.push(
        `kill ${k + 1} after ${fake.counts.ok} calls, ${await applied(harness, threads)} applied`,
      );
    }
    // The storm was really interrupted: work was outstanding when the last worker died.
    const settled = await Promise.all(threads.map((t) => isSettled(harness, t)));
    expect(settled.every(Boolean)).toBe(false);
    await Promise.all(waves);

    const last = spawnWorker(nats.url, harness.names, settings, env);
    processes.push(last);
    await last.ready();
    await waitSettled(harness, threads, 120_000);
    await expectMatchesCleanRun(harness, threads, settings);
    console.log(`${kills.join("; ")}; ${fake.counts.ok} summarizer calls in all`);
    last.kill("SIGTERM");
    expect((await last.exited).code).toBe(0);
  });
});
