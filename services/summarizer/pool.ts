import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { ExtractResult, ExtractTask } from "./extract/work.ts";

/**
 * The node a task builds: its thread keeps the digest of what it made under this key, and a
 * merge takes its children's from there (a digest is read from a line: held, it spares the
 * merge that reading; it never changes a line), so digests never cross between threads (cloning them
 * each way was most of what a hand-over cost the event loop, bench e2e heavy).
 */
export interface NodeKey {
  thread: string;
  level: number;
  index: number;
}

/** A task's answer: the line, and its digest when the task named no node (kept by the caller). */
export type ExtractAnswer = Pick<ExtractResult, "text"> & Partial<Pick<ExtractResult, "digest">>;

/** Digests a thread holds: how many and their approximate bytes. */
export interface HeldDigests {
  digests: number;
  bytes: number;
}

/**
 * Tasks a thread is given at once, at most: what is queued when it is free goes as one message
 * and comes back as one, so a conversation's results reach the host together (one burst of
 * summaries per thread and answer). A busy thread leaves hundreds queued; at 64 a batch each
 * answer covered a few of a conversation's nodes, and bursts of summaries alone were 2.5× those
 * of an instant summarizer (bench e2e heavy).
 */
const BATCH = 1024;

/**
 * The thread's module beside this one, in its language: `extract-thread.ts` when this runs as
 * TypeScript (tsx, vitest), `extract-thread.js` when the services are compiled (a build must emit
 * it next to the module that holds this code: a bundle's own file, say).
 */
export function threadEntry(from: string = import.meta.url): URL {
  const ext = /\.[cm]?[jt]s$/.exec(new URL(from).pathname)?.[0] ?? ".js";
  return new URL(`./extract-thread${ext}`, from);
}

/**
 * What a thread needs to load `entry`: nothing for compiled JavaScript; for a `.ts` entry (tsx,
 * vitest) tsx's ESM API, registered in the thread before the entry is imported. (Node 20 loads a
 * worker's own entry file before an `--import` hook in its execArgv takes effect, so a `.ts`
 * entry cannot be the worker's file: a bootstrap imports it.)
 */
export function tsxApiFor(entry: URL): string | undefined {
  if (!entry.pathname.endsWith(".ts")) return undefined;
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("tsx/package.json");
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as {
    exports: Record<string, { import: { default: string } }>;
  };
  const api = pkg.exports["./esm/api"]?.import.default;
  if (!api) throw new Error(`tsx at ${manifest} has no ESM API to load ${entry.pathname} with`);
  return pathToFileURL(join(dirname(manifest), api)).href;
}

// A thread's first code: registers tsx when asked (workerData.tsx), then imports workerData.entry
// (the bench's worker thread starts so too). CommonJS, as code given to `new Worker(…, { eval:
// true })` runs.
export const BOOTSTRAP = `const { workerData } = require("node:worker_threads");
(async () => {
  if (workerData.tsx) (await import(workerData.tsx)).register();
  await import(workerData.entry);
})().catch((err) => { setImmediate(() => { throw err; }); });`;

/** Threads for the offline summarizer: the cores but one (the event loop's), at least 1, at most 4. */
export function defaultThreads(cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1));
}

interface Waiting {
  id: number;
  task: ExtractTask;
  node: NodeKey | undefined;
  /** The thread it runs on (a conversation's digests are in one thread: -1, any thread). */
  slot: number;
  resolve(result: ExtractAnswer): void;
  reject(err: Error): void;
  signal: AbortSignal | undefined;
}

interface Slot {
  worker: Worker;
  running: Map<number, Waiting>;
  /** It has answered a task: it started. */
  answered: boolean;
  /** The digests it holds, as of its last answer. */
  held: HeldDigests;
}

/** Threads that die before their first answer, in a row, before the pool gives up. */
const START_FAILURES = 3;

/** The threads cannot start (a missing or broken entry): the work belongs on the event loop. */
export class PoolUnavailableError extends Error {
  override readonly name = "PoolUnavailableError";
}

type Answer = { ok: true; result: ExtractAnswer } | { ok: false; error: string };

/** A thread's tasks go to one of the pool's threads, always the same (FNV-1a of its name). */
function slotOf(thread: string, size: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < thread.length; i++) h = Math.imul(h ^ thread.charCodeAt(i), 0x01000193);
  return (h >>> 0) % size;
}

/**
 * A few worker threads running the extractive summarizer's tasks, so a long message or a merge
 * never holds the event loop that handles the thread worker's events. A task naming a node goes
 * to the thread that holds its conversation's digests (the same one for every node of it); others
 * to any idle thread. A thread that dies fails its tasks (the job retries) and is replaced, its
 * digests lost (merges then read their children's lines, which gives the same lines: how many
 * threads there are, and which one holds what, never changes a line). Threads start with the first task,
 * and idle ones do not keep the process alive.
 */
export class ExtractPool {
  readonly size: number;
  readonly #entry: URL;
  readonly #tsx: string | undefined;
  readonly #slots: Slot[] = [];
  readonly #queue: Waiting[] = [];
  #next = 0;
  #closed = false;
  #startFailures = 0;
  #flushing = false;
  #unavailable: PoolUnavailableError | undefined;
  #cpuMs = 0;
  /** Tasks not settled yet, by the abort signal they were given (`#listen`). */
  readonly #bySignal = new WeakMap<AbortSignal, Set<Waiting>>();

  constructor(size: number, entry: URL = threadEntry()) {
    if (!existsSync(fileURLToPath(entry))) {
      throw new Error(
        `the summarizer's thread entry ${fileURLToPath(entry)} is missing; a build must emit it beside the summarizer (or set HISTORY_SUMMARIZER_THREADS=0 to summarize on the event loop)`,
      );
    }
    this.size = Math.max(1, Math.floor(size));
    this.#entry = entry;
    this.#tsx = tsxApiFor(entry);
  }

  /** CPU milliseconds the threads spent on tasks so far (what summarizing costs, bench e2e). */
  get cpuMs(): number {
    return this.#cpuMs;
  }

  /** Threads that have answered a batch: started, their modules loaded, the summarizer run. */
  get started(): number {
    return this.#slots.filter((slot) => slot.answered).length;
  }

  /** Digests the threads hold for nodes whose parent is not built yet, as of their last answers. */
  held(): HeldDigests {
    const held = { digests: 0, bytes: 0 };
    for (const slot of this.#slots) {
      held.digests += slot.held.digests;
      held.bytes += slot.held.bytes;
    }
    return held;
  }

  /**
   * Runs `task`. With `node`, the thread keeps the digest of the line it makes under that key
   * (and a merge takes its children's from there): the answer has no digest then.
   */
  run(task: ExtractTask, signal?: AbortSignal, node?: NodeKey): Promise<ExtractAnswer> {
    if (this.#unavailable) return Promise.reject(this.#unavailable);
    if (this.#closed) return Promise.reject(new Error("the summarizer's threads are closed"));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<ExtractAnswer>((resolve, reject) => {
      const slot = node ? slotOf(node.thread, this.size) : -1;
      const waiting: Waiting = { id: this.#next++, task, node, slot, resolve, reject, signal };
      if (signal) this.#listen(signal).add(waiting);
      this.#queue.push(waiting);
      // Threads start with the first task: a process that never summarizes never starts one.
      while (this.#slots.length < this.size) this.#slots.push(this.#spawn());
      // What the rest of this turn asks for goes in the same batch.
      if (!this.#flushing) {
        this.#flushing = true;
        setImmediate(() => {
          this.#flushing = false;
          this.#dispatch();
        });
      }
    });
  }

  /**
   * Starts every thread now and has each summarize a line once: a thread's start (the loader,
   * the summarizer's modules, its first compile) then costs nothing once events flow.
   */
  async start(): Promise<void> {
    const warm: ExtractTask = {
      kind: "leaf",
      message: { from: "user", to: "agent", text: "Start the summarizer threads." },
      position: 0,
      line: 64,
    };
    await Promise.all(Array.from({ length: this.size }, () => this.run(warm)));
  }

  /** Ends every thread; tasks not answered yet fail. */
  async close(): Promise<void> {
    this.#closed = true;
    const error = new Error("the summarizer's threads were closed");
    for (const waiting of this.#queue.splice(0)) this.#settle(waiting).reject(error);
    await Promise.all(
      this.#slots.map(async (slot) => {
        for (const waiting of slot.running.values()) this.#settle(waiting).reject(error);
        slot.running.clear();
        await slot.worker.terminate();
      }),
    );
  }

  #spawn(): Slot {
    const worker = new Worker(BOOTSTRAP, {
      eval: true,
      // The process's flags (tsx's, vitest's) are not the thread's: it loads what it is told.
      execArgv: [],
      workerData: { entry: this.#entry.href, tsx: this.#tsx },
    });
    const slot: Slot = { worker, running: new Map(), answered: false, held: NO_DIGESTS };
    worker.unref();
    type Reply = { ids: number[]; answers: Answer[]; cpuMs?: number; held?: HeldDigests };
    worker.on("message", (reply: Reply) => {
      const { ids, answers } = reply;
      this.#cpuMs += reply.cpuMs ?? 0;
      if (reply.held) slot.held = reply.held;
      slot.answered = true;
      this.#startFailures = 0;
      ids.forEach((id, i) => {
        const waiting = slot.running.get(id);
        const answer = answers[i];
        if (!waiting || !answer) return;
        slot.running.delete(id);
        const settle = this.#settle(waiting);
        if (answer.ok) settle.resolve(answer.result);
        else settle.reject(new Error(`extractive summarizer thread: ${answer.error}`));
      });
      if (slot.running.size === 0) worker.unref();
      this.#dispatch();
    });
    const fail = (err: Error) => {
      const at = this.#slots.indexOf(slot);
      if (at < 0) return;
      if (!slot.answered && ++this.#startFailures >= START_FAILURES) {
        this.#unavailable = new PoolUnavailableError(
          `the summarizer's threads cannot start (${err.message}); summarizing on the event loop`,
        );
      }
      const failed = [...slot.running.values()];
      slot.running.clear();
      if (this.#unavailable) {
        this.#slots.splice(at, 1);
        failed.push(...this.#queue.splice(0));
        for (const waiting of failed) this.#settle(waiting).reject(this.#unavailable);
        return;
      }
      // A thread that never started did not fail its tasks: they wait for the next one.
      if (slot.answered) for (const waiting of failed) this.#settle(waiting).reject(err);
      else this.#queue.unshift(...failed);
      if (this.#closed) return;
      this.#slots[at] = this.#spawn();
      this.#dispatch();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => {
      if (!this.#closed) fail(new Error(`the summarizer's thread exited with code ${code}`));
    });
    return slot;
  }

  /**
   * Idle threads each take, as one batch, the queued tasks bound to them and a share of the
   * others.
   */
  #dispatch(): void {
    const idle: number[] = [];
    this.#slots.forEach((slot, at) => {
      if (slot.running.size === 0) idle.push(at);
    });
    let free = this.#queue.filter((w) => w.slot < 0).length;
    for (const [i, at] of idle.entries()) {
      if (this.#queue.length === 0) return;
      const slot = this.#slots[at] as Slot;
      let share = Math.ceil(free / (idle.length - i));
      const batch: Waiting[] = [];
      const rest: Waiting[] = [];
      for (const waiting of this.#queue) {
        const mine = waiting.slot === at || (waiting.slot < 0 && share > 0);
        if (mine && batch.length < BATCH) {
          if (waiting.slot < 0) {
            share -= 1;
            free -= 1;
          }
          batch.push(waiting);
        } else rest.push(waiting);
      }
      if (batch.length === 0) continue;
      this.#queue.splice(0, this.#queue.length, ...rest);
      slot.worker.ref();
      for (const waiting of batch) slot.running.set(waiting.id, waiting);
      slot.worker.postMessage({
        ids: batch.map((w) => w.id),
        tasks: batch.map((w) => w.task),
        nodes: batch.map((w) => w.node ?? null),
      });
    }
  }

  /**
   * The tasks waiting under `signal`, with one abort listener for all of them: a listener added
   * and removed per task was most of what asking for a node cost the event loop (bench e2e heavy).
   */
  #listen(signal: AbortSignal): Set<Waiting> {
    let tasks = this.#bySignal.get(signal);
    if (!tasks) {
      const waiting = (tasks = new Set());
      this.#bySignal.set(signal, waiting);
      signal.addEventListener(
        "abort",
        () => {
          this.#bySignal.delete(signal);
          for (const task of waiting) {
            const at = this.#queue.indexOf(task);
            if (at >= 0) this.#queue.splice(at, 1);
            task.reject(abortError(signal));
          }
        },
        { once: true },
      );
    }
    return tasks;
  }

  /** The task's callbacks, the task no longer waiting on its abort signal. */
  #settle(waiting: Waiting): Pick<Waiting, "resolve" | "reject"> {
    if (waiting.signal) this.#bySignal.get(waiting.signal)?.delete(waiting);
    return waiting;
  }
}

const NO_DIGESTS: HeldDigests = { digests: 0, bytes: 0 };

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("aborted");
}
