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
  waitSettled,
} from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
/** No other call for this long: the thread has nothing left to summarize but the refused. */
const QUIET_MS = 500;

/**
 * The fake summarizer, refusing (a terminal error, as a 400 is) its first `refuse` calls. A
 * refusal is held until every other call has been answered and none came for a while, so the
 * refused nodes are all the thread has left to do when they fail, however slow the host. It
 * notes when it refused last and, at the first call again for a node it refused, when that came
 * and how many passivations the worker had made by then: the test reads the order of events.
 */
class RefusingSummarizer extends FakeSummarizer {
  refused = 0;
  readonly #refusedNodes = new Set<string>();
  #othersInFlight = 0;
  #lastOtherAt = 0;
  lastRefusalAt = 0;
  passivationsAtLastRefusal = -1;
  retryAt = 0;
  passivationsAtRetry = -1;
  constructor(
    private readonly refuse: number,
    private readonly passivations: () => number,
  ) {
    super();
  }

  override async summarize(job: SummaryJob, signal?: AbortSignal) {
    if (this.refused < this.refuse) {
      this.refused += 1;
      this.#refusedNodes.add(job.name);
      while (this.#othersInFlight > 0 || Date.now() - this.#lastOtherAt < QUIET_MS)
        await new Promise((r) => setTimeout(r, 50));
      this.lastRefusalAt = Date.now();
      this.passivationsAtLastRefusal = this.passivations();
      throw new SummarizerError("BAD_REQUEST", "refused (test)", { terminal: true, status: 400 });
    }
    if (this.retryAt === 0 && this.#refusedNodes.has(job.name)) {
      this.retryAt = Date.now();
      this.passivationsAtRetry = this.passivations();
    }
    this.#othersInFlight += 1;
    try {
      return await super.summarize(job, signal);
    } finally {
      this.#othersInFlight -= 1;
      this.#lastOtherAt = Date.now();
    }
  }
}

describe("thread worker, nodes the summarizer refuses", () => {
  it("lets the thread leave memory while a refused node waits out its backoff, then wakes it to try again; the outline ends as the pure core's", async () => {
    const { h } = await scope.setup("refusals-test");
    let passivations = () => 0;
    const summarizer = new RefusingSummarizer(2, () => passivations());
    // Waits are drawn within ±20% of it (backoffMs in retry.ts): long next to the idle time, so
    // the thread leaves memory well before its wait is over, however loaded the host.
    const backoffMs = 3_000;
    const shortest = 0.8 * backoffMs;
    const worker = await scope.start(h, {
      summarizer,
      idleMs: 100,
      jobTiming: { terminalBaseMs: backoffMs, terminalCapMs: backoffMs },
    });
    passivations = () => worker.metrics.get(METRIC.passivations);
    const thread = "refused-thread";
    for (let i = 0; i < 40; i++) await publishMessage(h, chatMessage(thread, i));

    // No event comes after the refusals: the worker brings the thread back when the wait is
    // over, tries again, and the thread settles.
    await waitSettled(h, [thread], 30_000);
    expect(summarizer.refused).toBe(2);
    expect(worker.metrics.get(METRIC.summaryFailures)).toBe(2);
    // The thread left memory after the last refusal and before the retry (nothing else to do
    // but wait), and was brought back for it.
    expect(summarizer.passivationsAtRetry).toBeGreaterThan(summarizer.passivationsAtLastRefusal);
    expect(worker.metrics.get(METRIC.rehydrations)).toBeGreaterThanOrEqual(1);
    // The retry waited out the backoff (timers never fire early, whatever the load).
    expect(summarizer.retryAt - summarizer.lastRefusalAt).toBeGreaterThanOrEqual(shortest);
    expect(await readSnapshot(h, thread)).toEqual(await expectedSnapshot(h, thread, SMALL));
  });
});
