// A worker thread of the extractive summarizer (services/summarizer/pool.ts): tasks in, lines
// and digests out. A plain module so it runs as TypeScript (through tsx's loader) and compiled.
import { parentPort } from "node:worker_threads";
import { runTask, type ExtractTask } from "./extract/work.ts";

const port = parentPort;
if (!port) throw new Error("extract-thread.ts runs as a worker thread of the summarizer's pool");

port.on("message", ({ id, task }: { id: number; task: ExtractTask }) => {
  try {
    port.postMessage({ id, ok: true, result: runTask(task) });
  } catch (err) {
    port.postMessage({
      id,
      ok: false,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
  }
});
