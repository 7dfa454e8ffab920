// Starts bench/support/applier-thread.ts: the worker's writes of bench prompt's real turns, off
// the event loop that serves the prompts.
import { Worker } from "node:worker_threads";
import type { InfraNames } from "../../services/config/names.ts";
import { BOOTSTRAP, tsxApiFor } from "../../services/summarizer/pool.ts";

/** One message applied: its id claimed in the worker's id index, then the thread's snapshot. */
export interface ApplyJob {
  n: number;
  thread: string;
  id: string;
  seq: number;
  snapshot: string;
}

export interface Applier {
  /**
   * Hands the job to the thread (the copy of its snapshot is made now); `start` sends its writes
   * and resolves once the server acknowledged both.
   */
  stage(job: Omit<ApplyJob, "n">): { start(): Promise<void> };
  stop(): Promise<void>;
}

export async function startApplier(url: string, names: InfraNames): Promise<Applier> {
  const entry = new URL("./applier-thread.ts", import.meta.url);
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    execArgv: [],
    workerData: { entry: entry.href, tsx: tsxApiFor(entry), url, names },
  });
  const waiting = new Map<number, { resolve(): void; reject(err: Error): void }>();
  let failed: Error | undefined;
  worker.on("error", (err: Error) => {
    failed = err;
    for (const w of waiting.values()) w.reject(err);
  });
  await new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve());
    worker.once("error", reject);
  });
  worker.on("message", (reply: { n: number; error?: string }) => {
    const w = waiting.get(reply.n);
    waiting.delete(reply.n);
    if (reply.error) w?.reject(new Error(`the bench's worker writes failed: ${reply.error}`));
    else w?.resolve();
  });
  let n = 0;
  return {
    stage(job) {
      const id = n++;
      worker.postMessage({ ...job, n: id });
      return {
        start() {
          if (failed) return Promise.reject(failed);
          return new Promise<void>((resolve, reject) => {
            waiting.set(id, { resolve, reject });
            worker.postMessage(id);
          });
        },
      };
    },
    async stop() {
      worker.postMessage("stop");
      await new Promise((resolve) => worker.once("exit", resolve));
    },
  };
}
