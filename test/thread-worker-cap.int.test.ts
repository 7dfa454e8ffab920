import { describe, expect, it } from "vitest";
import type { SummaryJob } from "../shared/jobs.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import {
  chatMessage,
  expectedSnapshot,
  FakeSummarizer,
  publishMessage,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
} from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
const ROUNDS = 4;

/** The fake summarizer, every call held until `open()`: threads stay busy with summaries. */
class GatedSummarizer extends FakeSummarizer {
  #open = false;
  #waiting: (() => void)[] = [];

  override async summarize(job: SummaryJob, signal?: AbortSignal) {
    if (!this.#open) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    return super.summarize(job, signal);
  }

  open(): void {
    this.#open = true;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  get held(): number {
    return this.#waiting.length;
  }
}

/** A message long enough (past SMALL's tail) that the thread cuts and asks a summary. */
const longMessage = (thread: string, i: number) => ({
  ...chatMessage(thread, i),
  text: `long ${i} `.repeat(200),
});

describe("thread worker: the actor cap (OUTLINE_MAX_ACTORS)", () => {
  it("with more threads than the cap, live actors stay within it, threads at rest are passivated and re-loaded, and every snapshot matches the core", async () => {
    const { h } = await scope.setup("cap-test");
    const cap = 4;
    const worker = await scope.start(h, { maxActors: cap });
    const threads = Array.from({ length: 12 }, (_, t) => `cap${t}`);
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, worker.registry.size)), 2);
    try {
      // Round-robin, each round settled before the next, so each thread comes back after the
      // others pushed it out.
      for (let i = 0; i < ROUNDS; i++) {
        await Promise.all(threads.map((t) => publishMessage(h, chatMessage(t, i))));
        await waitSettled(h, threads, 60_000);
      }
    } finally {
      clearInterval(sampler);
    }
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(cap);
    expect(worker.registry.size).toBeLessThanOrEqual(cap);
    const capped = worker.metrics.get(METRIC.capPassivations);
    expect(capped).toBeGreaterThan(0);
    // At most 4 of the 12 threads are still in memory when the next round starts: the others
    // are re-loaded.
    expect(worker.metrics.get(METRIC.rehydrations)).toBeGreaterThanOrEqual(
      (ROUNDS - 1) * (threads.length - cap),
    );
    // Each message applied once: no duplicate skipped, none lost.
    expect(worker.metrics.get(METRIC.events, { kind: "message" })).toBe(threads.length * ROUNDS);
    for (const thread of threads) {
      expect(await readSnapshot(h, thread), `snapshot of ${thread}`).toEqual(
        await expectedSnapshot(h, thread, SMALL),
      );
    }
    const text = await worker.renderMetrics();
    expect(text).toMatch(new RegExp(`^outline_worker_cap_passivations_total ${capped}$`, "m"));
    expect(text).toMatch(/^outline_worker_actor_cap 4$/m);
    expect(text).toMatch(/^outline_worker_actors [0-4]$/m);
  });

  it("when every actor is busy, a new thread's events wait unacknowledged and come in once one is at rest", async () => {
    const { h } = await scope.setup("cap-busy-test");
    const summarizer = new GatedSummarizer();
    const worker = await scope.start(h, { maxActors: 2, summarizer });
    for (let i = 0; i < 2; i++) {
      await publishMessage(h, longMessage("busy-a", i));
      await publishMessage(h, longMessage("busy-b", i));
    }
    await waitFor("both threads to ask a summary", () => summarizer.held >= 2, 10_000);
    await publishMessage(h, chatMessage("late-c", 0));
    await waitFor("the third thread to wait", () => worker.registry.waiting === 1, 10_000);
    // A while later it still waits: nothing busy is passivated to let it in.
    await new Promise((r) => setTimeout(r, 500));
    expect(worker.registry.size).toBe(2);
    expect(worker.registry.waiting).toBe(1);
    expect(worker.registry.peek("late-c")).toBeUndefined();
    // Saved and acknowledged, but a summary in flight: not at rest, so not to be passivated.
    for (const thread of ["busy-a", "busy-b"]) {
      const slot = worker.registry.peek(thread);
      expect(slot?.evictable, thread).toBe(false);
      expect(slot?.passivating, thread).toBe(false);
    }
    expect(worker.metrics.get(METRIC.capPassivations)).toBe(0);
    expect(await readSnapshot(h, "late-c")).toBeNull();
    const info = await h.jsm.consumers.info(h.names.chatStream, h.names.workerDurable);
    expect(info.num_ack_pending).toBeGreaterThanOrEqual(1);
    expect(await worker.renderMetrics()).toMatch(/^outline_worker_intake_waiting_threads 1$/m);

    summarizer.open();
    await waitSettled(h, ["busy-a", "busy-b", "late-c"], 30_000);
    expect(worker.metrics.get(METRIC.capPassivations)).toBeGreaterThanOrEqual(1);
    expect(worker.registry.waiting).toBe(0);
    expect(worker.registry.size).toBeLessThanOrEqual(2);
    // Settled: whichever actors are left are at rest.
    await waitFor(
      "the live actors to be at rest",
      () => worker.registry.threads().every((t) => worker.registry.peek(t)?.evictable),
      10_000,
    );
    for (const thread of ["busy-a", "busy-b", "late-c"]) {
      expect(await readSnapshot(h, thread), `snapshot of ${thread}`).toEqual(
        await expectedSnapshot(h, thread, SMALL),
      );
    }
  });

  it("/metrics carries the process figures: heap, RSS, event-loop lag", async () => {
    const { h } = await scope.setup("cap-metrics-test");
    const worker = await scope.start(h);
    const text = await worker.renderMetrics();
    expect(text).toMatch(/^outline_worker_process_resident_memory_bytes [1-9]\d*$/m);
    expect(text).toMatch(/^outline_worker_nodejs_heap_size_used_bytes [1-9]\d*$/m);
    expect(text).toMatch(/^outline_worker_nodejs_eventloop_lag_seconds [\d.e-]+$/m);
    expect(text).toMatch(/^outline_worker_actor_cap 5000$/m);
    expect(text).toMatch(/^outline_worker_cap_passivations_total 0$/m);
  });
});
