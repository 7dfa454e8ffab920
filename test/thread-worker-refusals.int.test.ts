import { describe, expect, it } from "vitest";
import type { SummaryJob } from "../shared/jobs.ts";
import { SummarizerError } from "../services/summarizer/errors.ts";
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

/** The fake summarizer, refusing (a terminal error, as a 400 is) its first `refuse` calls. */
class RefusingSummarizer extends FakeSummarizer {
  refused = 0;
  constructor(private readonly refuse: number) {
    super();
  }

  override async summarize(job: SummaryJob, signal?: AbortSignal) {
    if (this.refused < this.refuse) {
      this.refused += 1;
      throw new SummarizerError("BAD_REQUEST", "refused (test)", { terminal: true, status: 400 });
    }
    return super.summarize(job, signal);
  }
}

describe("thread worker, nodes the summarizer refuses", () => {
  it("lets the thread leave memory while a refused node waits out its backoff, then wakes it to try again; the outline ends as the pure core's", async () => {
    const { h } = await scope.setup("refusals-test");
    const summarizer = new RefusingSummarizer(2);
    // Waits are drawn within ±20% of it (backoffMs in retry.ts).
    const backoffMs = 1_500;
    const shortest = 0.8 * backoffMs;
    const worker = await scope.start(h, {
      summarizer,
      idleMs: 100,
      jobTiming: { terminalBaseMs: backoffMs, terminalCapMs: backoffMs },
    });
    const thread = "refused-thread";
    for (let i = 0; i < 40; i++) await publishMessage(h, chatMessage(thread, i));

    await waitFor("the summarizer to refuse twice", () => summarizer.refused === 2, 10_000);
    const refusedAt = Date.now();
    // Nothing else to do but wait: the thread is passivated, not kept for the whole backoff.
    await waitFor(
      "the thread to leave memory while its nodes wait",
      () => worker.registry.peek(thread) === undefined,
      shortest - 300,
    );
    expect(Date.now() - refusedAt).toBeLessThan(shortest);
    const callsWhilePassive = summarizer.calls;

    // No event comes: the worker brings the thread back when the wait is over, and it settles.
    await waitSettled(h, [thread], 20_000);
    expect(Date.now() - refusedAt).toBeGreaterThanOrEqual(shortest - 50);
    expect(summarizer.calls).toBeGreaterThan(callsWhilePassive);
    expect(worker.metrics.get(METRIC.summaryFailures)).toBe(2);
    expect(worker.metrics.get(METRIC.rehydrations)).toBeGreaterThanOrEqual(1);
    expect(await readSnapshot(h, thread)).toEqual(await expectedSnapshot(h, thread, SMALL));
  });
});
