import type { ContextLine, SummaryJob, SummaryResult, Summarizer } from "../../shared/jobs.ts";
import { DigestCache } from "./digests.ts";
import type { Digest } from "./extract/digest.ts";
import { readable } from "./extract/leaf.ts";
import {
  mergeWork,
  runTask,
  type ExtractResult,
  type ExtractTask,
  type LeafTask,
  type MergeTask,
} from "./extract/work.ts";
import { PoolUnavailableError, type ExtractPool } from "./pool.ts";
import { noUsage, type UsageTotals } from "./usage.ts";

export { extractLeaf } from "./extract/leaf.ts";

/**
 * Two adjacent lines in one, chosen from their clauses (their digests: given when held, else read
 * from the lines, the same either way).
 */
export function extractMerge(
  left: ContextLine,
  right: ContextLine,
  line: number,
  digests: { left?: Digest; right?: Digest } = {},
): string {
  return mergeWork({
    kind: "merge",
    left,
    right,
    line,
    ...(digests.left ? { leftDigest: digests.left } : {}),
    ...(digests.right ? { rightDigest: digests.right } : {}),
  }).text;
}

export interface ExtractiveOptions {
  /** Worker threads that do the work off the event loop; none (on the event loop) when absent. */
  pool?: ExtractPool;
  /**
   * Bytes of digests held for nodes whose parent is not built yet (64 MiB by default): how much
   * reading lines again it saves, never what a line says.
   */
  digestBytes?: number;
}

/**
 * The offline default: deterministic, no network, no model. A leaf keeps who said it, the
 * opening and the exact tokens; a merge chooses among the clauses of its two children's lines,
 * weighing rare terms, names, numbers, ids and dates, requests, decisions and outcomes. A node's
 * line is a pure function of the messages it covers and the settings: what this process holds
 * (digests, threads, their number) only makes it sooner.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly name = "extractive";
  /** A node costs well under a millisecond of CPU: less than a HISTORY read (bench e2e heavy). */
  readonly cheap = true;
  readonly #digests: DigestCache;
  readonly #pool: ExtractPool | undefined;
  #inline = false;
  /** CPU milliseconds spent on the event loop summarizing (no pool, or one that cannot start). */
  #inlineCpuMs = 0;

  constructor(options: ExtractiveOptions = {}) {
    this.#digests = new DigestCache(options.digestBytes);
    this.#pool = options.pool;
  }

  /** Offline: no model calls, no tokens, and the CPU it took (threads and event loop). */
  usage(): UsageTotals {
    return { ...noUsage(), cpuMs: (this.#pool?.cpuMs ?? 0) + this.#inlineCpuMs };
  }

  /** Digests held now (here and in the threads): how many and their approximate bytes. */
  held(): { digests: number; bytes: number } {
    const threads = this.#pool?.held() ?? { digests: 0, bytes: 0 };
    return {
      digests: this.#digests.size + threads.digests,
      bytes: this.#digests.bytes + threads.bytes,
    };
  }

  /**
   * On the pool, whose thread keeps the node's digest for its parent's merge; on the event loop
   * (digests kept here) without one, or from the first time its threads cannot start.
   */
  async summarize(job: SummaryJob, signal?: AbortSignal): Promise<SummaryResult> {
    if (this.#pool && !this.#inline) {
      const node = { thread: job.thread, level: job.level, index: job.index };
      try {
        const { text } = await this.#pool.run(this.#taskOf(job, false), signal, node);
        return { text, calls: 0 };
      } catch (err) {
        if (!(err instanceof PoolUnavailableError)) throw err;
        this.#inline = true;
        process.emitWarning(err.message, { code: "OUTLINE_SUMMARIZER_THREADS" });
      }
    }
    const result = this.#runInline(this.#taskOf(job, true));
    this.#digests.put(job.thread, job.level, job.index, result.digest);
    return { text: result.text, calls: 0 };
  }

  #runInline(task: ExtractTask): ExtractResult {
    const before = process.cpuUsage();
    try {
      return runTask(task);
    } finally {
      const used = process.cpuUsage(before);
      this.#inlineCpuMs += (used.user + used.system) / 1_000;
    }
  }

  /** Starts the worker threads before the first job, if any (ExtractPool.start). */
  async start(): Promise<void> {
    if (!this.#pool || this.#inline) return;
    try {
      await this.#pool.start();
    } catch (err) {
      if (!(err instanceof PoolUnavailableError)) throw err;
      this.#inline = true;
      process.emitWarning(err.message, { code: "OUTLINE_SUMMARIZER_THREADS" });
    }
  }

  /** Stops the worker threads, if any. */
  async close(): Promise<void> {
    await this.#pool?.close();
  }

  /** `digests`: a merge carries its children's digests held here (none: the thread has them). */
  #taskOf(job: SummaryJob, digests: boolean): ExtractTask {
    // Optional fields are set, not spread in: a spread copy is V8's slow path (a task per node).
    if (job.kind === "leaf") {
      const { from, to, text, steps } = job.message;
      // Only what is read crosses to a worker thread: a huge paste is not copied whole.
      const message: LeafTask["message"] = { from, text: readable(text) };
      if (to) message.to = to;
      if (steps) message.steps = steps;
      return { kind: "leaf", message, position: job.message.position, line: job.line };
    }
    const half = job.level - 1;
    const take = (index: number, line: string) =>
      digests ? this.#digests.take(job.thread, half, index, line) : undefined;
    const leftDigest = take(job.index * 2, job.left.text);
    const rightDigest = take(job.index * 2 + 1, job.right.text);
    const task: MergeTask = {
      kind: "merge",
      left: { id: job.left.id, n: job.left.n, text: job.left.text },
      right: { id: job.right.id, n: job.right.n, text: job.right.text },
      line: job.line,
    };
    if (leftDigest) task.leftDigest = leftDigest;
    if (rightDigest) task.rightDigest = rightDigest;
    return task;
  }
}
