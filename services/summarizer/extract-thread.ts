// A worker thread of the extractive summarizer (services/summarizer/pool.ts): tasks in, lines
// and digests out. A plain module so it runs as TypeScript (through tsx's loader) and compiled.
import { parentPort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { runTask, type ExtractTask } from "./extract/work.ts";
import { threadCpuMs } from "./thread-cpu.ts";

const port = parentPort;
if (!port) throw new Error("extract-thread.ts runs as a worker thread of the summarizer's pool");

// A batch of tasks in, their answers out in one message, in the same order, with the CPU the
// thread spent on them (its wall time where the thread's CPU cannot be read).
port.on("message", ({ ids, tasks }: { ids: number[]; tasks: ExtractTask[] }) => {
  const cpuBefore = threadCpuMs();
  const wallBefore = performance.now();
  const answers = tasks.map((task) => {
    try {
      return { ok: true, result: runTask(task) };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
    }
  });
  const cpuAfter = cpuBefore === undefined ? undefined : threadCpuMs();
  const cpuMs =
    cpuBefore === undefined || cpuAfter === undefined
      ? performance.now() - wallBefore
      : cpuAfter - cpuBefore;
  port.postMessage({ ids, answers, cpuMs });
});
