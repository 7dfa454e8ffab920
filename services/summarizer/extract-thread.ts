// A worker thread of the extractive summarizer (services/summarizer/pool.ts): tasks in, lines
// out. A plain module so it runs as TypeScript (through tsx's loader) and compiled.
import { parentPort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { DigestCache } from "./digests.ts";
import { runTask, type ExtractTask } from "./extract/work.ts";
import type { NodeKey } from "./pool.ts";
import { ThrottledCpu } from "./thread-cpu.ts";

const port = parentPort;
if (!port) throw new Error("extract-thread.ts runs as a worker thread of the summarizer's pool");

// The digests of the nodes this thread made whose parent is not built yet: every node of a
// conversation is made here (the pool sends them all to one thread), so they never cross back.
// A digest missing here is read from the child's line in the merge: the same digest.
const digests = new DigestCache();

/** The task's line; a task naming its node keeps its digest here, and a merge takes its children's. */
function run(task: ExtractTask, node: NodeKey | null) {
  if (!node) return runTask(task);
  if (task.kind === "merge") {
    const { thread, level, index } = node;
    const left = digests.take(thread, level - 1, index * 2, task.left.text);
    const right = digests.take(thread, level - 1, index * 2 + 1, task.right.text);
    if (left) task.leftDigest = left;
    if (right) task.rightDigest = right;
  }
  const result = runTask(task);
  digests.put(node.thread, node.level, node.index, result.digest);
  return { text: result.text };
}

const cpu = new ThrottledCpu();
/** When `cpu` owes a read: once the thread has been idle that long, it reports on its own. */
let late: NodeJS.Timeout | undefined;
const CPU_LATE_MS = 100;

const held = () => ({ digests: digests.size, bytes: digests.bytes });

// A batch of tasks in, their answers out in one message, in the same order, with the CPU the
// thread spent (its wall time on the tasks where the thread's CPU cannot be read).
port.on(
  "message",
  ({ ids, tasks, nodes }: { ids: number[]; tasks: ExtractTask[]; nodes?: (NodeKey | null)[] }) => {
    const wallBefore = performance.now();
    const answers = tasks.map((task, i) => {
      try {
        return { ok: true, result: run(task, nodes?.[i] ?? null) };
      } catch (err) {
        return {
          ok: false,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        };
      }
    });
    const now = performance.now();
    const cpuMs = cpu.unreadable ? now - wallBefore : cpu.since(now);
    if (cpu.late && !late) {
      late = setTimeout(() => {
        late = undefined;
        if (!cpu.late) return;
        const owed = cpu.since(performance.now(), true);
        port.postMessage({ ids: [], answers: [], cpuMs: owed, held: held() });
      }, CPU_LATE_MS);
    }
    port.postMessage({ ids, answers, cpuMs, held: held() });
  },
);
