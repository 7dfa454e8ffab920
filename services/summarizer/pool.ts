import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { ExtractResult, ExtractTask } from "./extract/work.ts";

/** Tasks sent to one thread before its first answer: hides the hand-over between them. */
const PER_THREAD = 2;

/**
 * The thread entry beside this module, in its language: `extract-thread.ts` when this runs as
 * TypeScript (tsx, vitest), `extract-thread.js` when the services are compiled (a build must emit
 * the entry next to the module that holds this code).
 */
export function threadEntry(from: string = import.meta.url): URL {
  const ext = /\.[cm]?[jt]s$/.exec(new URL(from).pathname)?.[0] ?? ".js";
  return new URL(`./extract-thread${ext}`, from);
}

/**
 * Node flags for a thread running `entry`: a `.ts` entry needs tsx's loader, which a thread only
 * inherits when the process itself was started through tsx (not under vitest, say).
 */
export function threadExecArgv(
  entry: URL,
  execArgv: readonly string[] = process.execArgv,
): string[] {
  if (!entry.pathname.endsWith(".ts")) return [...execArgv];
  if (execArgv.some((arg) => /[\\/]tsx[\\/]/.test(arg))) return [...execArgv];
  const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  return [...execArgv, "--import", loader];
}

/** Threads for the offline summarizer: the cores but one (the event loop's), at least 1, at most 4. */
export function defaultThreads(cores = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1));
}

interface Waiting {
  id: number;
  task: ExtractTask;
  resolve(result: ExtractResult): void;
  reject(err: Error): void;
  signal: AbortSignal | undefined;
  onAbort?: () => void;
}

interface Slot {
  worker: Worker;
  running: Map<number, Waiting>;
}

type Answer =
  { id: number; ok: true; result: ExtractResult } | { id: number; ok: false; error: string };

/**
 * A few worker threads running the extractive summarizer's tasks, so a long message or a merge
 * never holds the event loop that handles the thread worker's events. Tasks go to the thread with
 * the fewest in hand; a thread that dies fails its tasks (the job retries) and is replaced. Idle
 * threads do not keep the process alive.
 */
export class ExtractPool {
  readonly size: number;
  readonly #entry: URL;
  readonly #execArgv: string[];
  readonly #slots: Slot[] = [];
  readonly #queue: Waiting[] = [];
  #next = 0;
  #closed = false;

  constructor(size: number, entry: URL = threadEntry()) {
    if (!existsSync(fileURLToPath(entry))) {
      throw new Error(
        `the summarizer's thread entry ${fileURLToPath(entry)} is missing; a build must emit it beside the summarizer (or set HISTORY_SUMMARIZER_THREADS=0 to summarize on the event loop)`,
      );
    }
    this.size = Math.max(1, Math.floor(size));
    this.#entry = entry;
    this.#execArgv = threadExecArgv(entry);
    for (let i = 0; i < this.size; i++) this.#slots.push(this.#spawn());
  }

  run(task: ExtractTask, signal?: AbortSignal): Promise<ExtractResult> {
    if (this.#closed) return Promise.reject(new Error("the summarizer's threads are closed"));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<ExtractResult>((resolve, reject) => {
      const waiting: Waiting = { id: this.#next++, task, resolve, reject, signal };
      if (signal) {
        waiting.onAbort = () => {
          const at = this.#queue.indexOf(waiting);
          if (at >= 0) this.#queue.splice(at, 1);
          reject(abortError(signal));
        };
        signal.addEventListener("abort", waiting.onAbort, { once: true });
      }
      this.#queue.push(waiting);
      this.#dispatch();
    });
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
    const worker = new Worker(this.#entry, { execArgv: this.#execArgv });
    const slot: Slot = { worker, running: new Map() };
    worker.unref();
    worker.on("message", (answer: Answer) => {
      const waiting = slot.running.get(answer.id);
      if (!waiting) return;
      slot.running.delete(answer.id);
      if (slot.running.size === 0) worker.unref();
      const settle = this.#settle(waiting);
      if (answer.ok) settle.resolve(answer.result);
      else settle.reject(new Error(`extractive summarizer thread: ${answer.error}`));
      this.#dispatch();
    });
    const fail = (err: Error) => {
      const at = this.#slots.indexOf(slot);
      if (at < 0) return;
      for (const waiting of slot.running.values()) this.#settle(waiting).reject(err);
      slot.running.clear();
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

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot: Slot | undefined;
      for (const s of this.#slots)
        if (s.running.size < PER_THREAD && (!slot || s.running.size < slot.running.size)) slot = s;
      if (!slot) return;
      const waiting = this.#queue.shift() as Waiting;
      if (slot.running.size === 0) slot.worker.ref();
      slot.running.set(waiting.id, waiting);
      slot.worker.postMessage({ id: waiting.id, task: waiting.task });
    }
  }

  /** The task's callbacks, its abort listener removed. */
  #settle(waiting: Waiting): Pick<Waiting, "resolve" | "reject"> {
    if (waiting.onAbort) waiting.signal?.removeEventListener("abort", waiting.onAbort);
    return waiting;
  }
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("aborted");
}
