import { setMaxListeners } from "node:events";
import { cutToBytes, utf8Bytes } from "../../shared/bytes.ts";
import type { SummaryEvent } from "../../shared/history.ts";
import { groupJobs } from "../../shared/groups.ts";
import { canGroup, type SummaryGroup, type SummaryJob } from "../../shared/jobs.ts";
import type { NodeRef } from "../../shared/names.ts";
import { refKey as keyOf } from "../../shared/nodes.ts";
import type { MeteredSummarizer } from "../summarizer/index.ts";
import { SummarizerError } from "../summarizer/errors.ts";
import type { HistoryNodes } from "./history-nodes.ts";
import type { Limiter } from "./limiter.ts";
import { errorText, type Logger } from "./log.ts";
import { METRIC, type MetricRegistry } from "./metrics.ts";
import type { Refusals } from "./refusals.ts";
import { backoffMs, retryInPlace, sleep, StoppedError } from "./retry.ts";
import type { RetryEntry, RetryLog } from "./retry-log.ts";

export interface JobTiming {
  /** Retryable errors: first wait and cap. */
  retryBaseMs: number;
  retryCapMs: number;
  /** After a terminal error, before the same node is tried again: first wait and cap. */
  terminalBaseMs: number;
  terminalCapMs: number;
}

export const DEFAULT_JOB_TIMING: JobTiming = {
  retryBaseMs: 500,
  retryCapMs: 30_000,
  terminalBaseMs: 60_000,
  terminalCapMs: 15 * 60_000,
};

export interface SummaryJobsDeps {
  summarizer: MeteredSummarizer;
  /** Process-wide bound on summarizer calls in flight. */
  limiter: Limiter;
  history: HistoryNodes;
  metrics: MetricRegistry;
  log: Logger;
  /** The worker's retry log (retries of HISTORY reads and writes, grouped by cause). */
  retries: RetryLog;
  timing: JobTiming;
  /** The worker's record of refused nodes: their long backoff outlives this thread's jobs. */
  refusals: Refusals;
  /** Nodes per summarizer call (HISTORY_GROUP): jobs started in the same turn share calls. */
  group?: number;
  /** The node is on HISTORY (PubAck received): tell the actor. */
  built(ref: NodeRef, text: string): void;
  /** A terminal error: the node goes back to the actor's queue. */
  failed(ref: NodeRef, reason: string): void;
}

/** A job as the actor asked for it, with the `until` its HISTORY event carries. */
export interface RequestedJob {
  job: SummaryJob;
  until: string;
}

/**
 * Runs one thread's summary jobs: HISTORY first (a node built before a crash costs no model
 * call), then the summarizer under the process-wide limiter, retrying retryable errors with
 * backoff; the node is published to HISTORY and acknowledged before the actor hears of it. The
 * worker owns every timer; the actor only sees `built` or `failed`.
 */
export class SummaryJobs {
  readonly #deps: SummaryJobsDeps;
  readonly #abort = new AbortController();
  readonly #running = new Set<Promise<void>>();
  /** Jobs waiting out a refusal's backoff (nothing else to do: the thread may leave memory). */
  #waitingOut = 0;

  constructor(deps: SummaryJobsDeps) {
    this.#deps = deps;
    // Every job waiting (for the limiter, a retry, HISTORY) listens to this one signal: up to
    // concurrency × group of them per thread, past Node's warning threshold of 10 by design.
    setMaxListeners(0, this.#abort.signal);
  }

  /** Jobs running, and those started this turn that are not grouped into calls yet. */
  get active(): number {
    return this.#running.size + this.#pending.length;
  }

  /** Of the active jobs, those only waiting out a refusal's backoff. */
  get waitingOut(): number {
    return this.#waitingOut;
  }

  /** Jobs started in the current turn: grouped into summarizer calls at its end. */
  #pending: RequestedJob[] = [];

  start(request: RequestedJob): void {
    this.#pending.push(request);
    if (this.#pending.length === 1) queueMicrotask(() => this.#flush());
  }

  #flush(): void {
    const requests = this.#pending;
    this.#pending = [];
    const size = this.#deps.group ?? 1;
    if (size <= 1 || requests.length === 1 || !canGroup(this.#deps.summarizer)) {
      for (const request of requests) this.#track([request], this.#run(request));
      return;
    }
    const untils = new Map(requests.map((r) => [keyOf(r.job), r.until]));
    for (const group of groupJobs(
      requests.map((r) => r.job),
      size,
    )) {
      const members = group.jobs.map((job) => ({ job, until: untils.get(keyOf(job)) ?? "" }));
      const only = members[0];
      if (members.length === 1 && only) this.#track(members, this.#run(only));
      else this.#track(members, this.#runGroup(group, members));
    }
  }

  #track(requests: RequestedJob[], work: Promise<void>): void {
    const run = work.catch((err: unknown) => {
      if (err instanceof StoppedError || this.#abort.signal.aborted) return;
      // Not a summarizer error (those are handled in #run): a bug or a broken HISTORY. The nodes
      // go back to the actor, which asks again; the long backoff keeps this from spinning.
      for (const { job } of requests) {
        const ref = { level: job.level, index: job.index };
        this.#deps.refusals.refused(job.thread, ref, Date.now(), {
          what: `summary ${job.name} of thread '${job.thread}'`,
          error: err,
          fix: "not an error of the summarizer: HISTORY or the worker failed; the node is tried again after its wait",
        });
        this.#deps.failed(ref, errorText(err));
      }
    });
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
  }

  /** Stops every job and waits until none can still publish or report. */
  async stop(): Promise<void> {
    this.#abort.abort();
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  async #run({ job, until }: RequestedJob): Promise<void> {
    const d = this.#deps;
    const signal = this.#abort.signal;
    const ref = { level: job.level, index: job.index };
    const wait = d.refusals.waitMs(job.thread, ref, Date.now());
    if (wait > 0) {
      this.#waitingOut += 1;
      try {
        await sleep(wait, signal);
      } finally {
        this.#waitingOut -= 1;
      }
    }
    // A cheap summarizer builds the node again instead: publishing it then answers HISTORY's
    // text if the node was stored before (a crash after its publish), so each node has one text.
    if (!d.summarizer.cheap) {
      const what = `summary node ${job.name} of thread '${job.thread}'`;
      const stored = await retryInPlace(() => d.history.read(job.thread, job.level, job.index), {
        what: `read ${what} from HISTORY`,
        log: d.retries,
        signal,
      });
      if (stored) {
        d.metrics.add(METRIC.summaries, 1, { kind: job.kind, source: "history" });
        d.refusals.built(job.thread, ref);
        d.built(ref, stored.text);
        return;
      }
    }
    const text = await this.#summarize(job, signal);
    if (text === undefined) return;
    await this.#publish({ job, until }, text, "model");
  }

  /** Publishes a built node to HISTORY, then tells the actor (the text HISTORY holds). */
  async #publish({ job, until }: RequestedJob, text: string, source: string): Promise<void> {
    const d = this.#deps;
    const event: SummaryEvent = {
      thread: job.thread,
      level: job.level,
      index: job.index,
      text,
      until,
      by: d.summarizer.name,
    };
    // Set, not spread in: a spread copy is V8's slow path (one event per node).
    if (job.kind === "leaf") event.message = { id: job.message.id, seq: job.seq };
    const published = await retryInPlace(() => d.history.publish(event), {
      what: `publish summary node ${job.name} of thread '${job.thread}' to HISTORY`,
      log: d.retries,
      signal: this.#abort.signal,
    });
    // Not the event sent: HISTORY held the node already (its text wins).
    const from = published === event ? source : "history";
    d.metrics.add(METRIC.summaries, 1, { kind: job.kind, source: from });
    d.refusals.built(job.thread, job);
    d.built({ level: job.level, index: job.index }, published.text);
  }

  /**
   * A group of nodes in one summarizer call: those on HISTORY already are reported from there;
   * the rest share one call (one place under the limiter). Any node the call did not answer
   * usably (no line, over the limit), a node under a terminal backoff, or every node when the
   * call fails, is built alone as #run does, with its retries and rewrites.
   */
  async #runGroup(group: SummaryGroup, members: RequestedJob[]): Promise<void> {
    const d = this.#deps;
    const signal = this.#abort.signal;
    const stored = await Promise.all(
      members.map(({ job }) =>
        retryInPlace(() => d.history.read(job.thread, job.level, job.index), {
          what: `read summary node ${job.name} of thread '${job.thread}' from HISTORY`,
          log: d.retries,
          signal,
        }),
      ),
    );
    const todo: RequestedJob[] = [];
    const alone: RequestedJob[] = [];
    members.forEach((member, i) => {
      const { job } = member;
      const found = stored[i];
      if (found) {
        d.metrics.add(METRIC.summaries, 1, { kind: job.kind, source: "history" });
        d.refusals.built(job.thread, job);
        d.built({ level: job.level, index: job.index }, found.text);
      } else if (d.refusals.failures(job.thread, job) > 0) alone.push(member);
      else todo.push(member);
    });
    if (todo.length === 1) alone.push(...todo.splice(0));
    const texts: (string | undefined)[] = [];
    if (todo.length > 0 && canGroup(d.summarizer)) {
      await d.limiter.acquire(signal);
      try {
        const result = await d.summarizer.summarizeGroup(
          { ...group, jobs: todo.map((m) => m.job) },
          signal,
        );
        texts.push(...result.texts);
      } catch (err) {
        if (!signal.aborted) {
          d.metrics.add(METRIC.summaryRetries);
          d.log.warn(
            `summarizer failed on a group of ${todo.length} nodes of thread '${group.thread}'; building them one by one`,
            { error: errorText(err) },
          );
        }
      } finally {
        d.limiter.release();
      }
      if (signal.aborted) throw new StoppedError(`summary group of '${group.thread}'`);
    }
    const published = todo.map(async (member, i) => {
      const raw = texts[i];
      if (raw === undefined || raw.trim() === "") {
        this.#track([member], this.#run(member));
        return;
      }
      const limit = Math.floor(member.job.line * 1.25);
      await this.#publish(member, utf8Bytes(raw) > limit ? cutToBytes(raw, limit) : raw, "group");
    });
    for (const member of alone) this.#track([member], this.#run(member));
    await Promise.all(published);
  }

  /** The summary text, bounded as the core bounds it; undefined after a terminal error. */
  async #summarize(job: SummaryJob, signal: AbortSignal): Promise<string | undefined> {
    const d = this.#deps;
    const limit = Math.floor(job.line * 1.25);
    // Made at the first retryable failure: an outage of the model fails every node at once.
    let retrying: RetryEntry | undefined;
    let built = false;
    let attempt = 0;
    try {
      for (; ; attempt++) {
        let text: string | undefined;
        let error: unknown;
        // A cheap summarizer queues on its own threads: HISTORY_CONCURRENCY bounds model calls,
        // and under it the threads were handed 8 tasks at a time (a hand-over each, bench e2e).
        const limited = d.summarizer.cheap !== true;
        if (limited) await d.limiter.acquire(signal);
        try {
          text = (await d.summarizer.summarize(job, signal)).text;
        } catch (err) {
          error = err;
        } finally {
          if (limited) d.limiter.release();
        }
        if (signal.aborted) throw new StoppedError(`summary ${job.name}`);
        if (text !== undefined && text.trim() !== "") {
          built = true;
          return utf8Bytes(text) > limit ? cutToBytes(text, limit) : text;
        }
        error ??= new SummarizerError(
          "EMPTY_REPLY",
          `the summarizer returned an empty text for ${job.name}`,
          { terminal: false },
        );
        if (error instanceof SummarizerError && error.terminal) {
          d.metrics.add(METRIC.summaryFailures);
          d.refusals.refused(job.thread, job, Date.now(), {
            what: `summarize ${job.name} of thread '${job.thread}'`,
            error,
            fix: `the summarizer refused it (${error.code}): fix the cause, e.g. HISTORY_SUMMARIZER or OPENAI_API_KEY`,
          });
          d.failed({ level: job.level, index: job.index }, error.message);
          return undefined;
        }
        d.metrics.add(METRIC.summaryRetries);
        const wait = backoffMs(attempt, d.timing.retryBaseMs, d.timing.retryCapMs);
        retrying ??= d.retries.entry(`summarize ${job.name} of thread '${job.thread}'`);
        retrying.failed(error, attempt, wait);
        await sleep(wait, signal);
      }
    } finally {
      retrying?.ended(built, attempt + 1);
    }
  }
}
