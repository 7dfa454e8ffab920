// Starts bench/support/applier-thread.ts: bench prompt's worker, off the event loop that times
// the turns.
import { Worker } from "node:worker_threads";
import type { Message } from "../../shared/events.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { BOOTSTRAP, tsxApiFor } from "../../services/summarizer/pool.ts";

/** A bench thread as built: its next message's number, and its size. */
export interface ThreadStats {
  next: number;
  count: number;
  outlineBytes: number;
  outlineLines: number;
  tailTokens: number;
  tailMessages: number;
}

/** What the thread is asked, numbered for its reply. */
export type ApplierRequest = { n: number } & (
  | { kind: "build"; thread: string }
  | { kind: "stage"; thread: string; message: Message; seq: number }
  | { kind: "apply"; thread: string }
);

type Request = ApplierRequest extends infer R ? (R extends unknown ? Omit<R, "n"> : never) : never;

export interface Applier {
  /** A thread at a full outline and a full tail: its messages published, its snapshot put. */
  build(thread: string): Promise<ThreadStats>;
  /**
   * The thread's next message applied by the core on the sequence `seq` (the sequence its
   * publish will get), its snapshot encoded: whether it made a cut. Staging again replaces it.
   */
  stage(thread: string, message: Message, seq: number): Promise<boolean>;
  /** Writes what was staged: the id claimed, then the snapshot put; resolves once both are acked. */
  apply(thread: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startApplier(url: string, names: InfraNames): Promise<Applier> {
  const entry = new URL("./applier-thread.ts", import.meta.url);
  const worker = new Worker(BOOTSTRAP, {
    eval: true,
    execArgv: [],
    workerData: { entry: entry.href, tsx: tsxApiFor(entry), url, names },
  });
  const waiting = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
  let failed: Error | undefined;
  worker.on("error", (err: Error) => {
    failed = err;
    for (const w of waiting.values()) w.reject(err);
  });
  await new Promise<void>((resolve, reject) => {
    worker.once("message", () => resolve());
    worker.once("error", reject);
  });
  worker.on("message", (reply: { n: number; value?: unknown; error?: string }) => {
    const w = waiting.get(reply.n);
    waiting.delete(reply.n);
    if (reply.error !== undefined)
      w?.reject(new Error(`the bench's worker failed: ${reply.error}`));
    else w?.resolve(reply.value);
  });
  let n = 0;
  const ask = <T>(request: Request): Promise<T> => {
    if (failed) return Promise.reject(failed);
    const id = n++;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: (value) => resolve(value as T), reject });
      worker.postMessage({ ...request, n: id });
    });
  };
  return {
    build: (thread) => ask<ThreadStats>({ kind: "build", thread }),
    stage: (thread, message, seq) => ask<boolean>({ kind: "stage", thread, message, seq }),
    apply: (thread) => ask<void>({ kind: "apply", thread }),
    async stop() {
      worker.postMessage("stop");
      await new Promise((resolve) => worker.once("exit", resolve));
    },
  };
}
