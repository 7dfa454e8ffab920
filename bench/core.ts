// The pure core on one thread of 1,000,000 messages with an instant summarizer: messages per
// second, summarizer calls per message (free vs model), and time per message over windows at
// 10k, 100k and 1M messages. Flat times per message mean O(1) amortised work.
import { performance } from "node:perf_hooks";
import type { Message } from "../shared/events.ts";
import { lineName, type NodeRef } from "../shared/names.ts";
import { answerByRef } from "../shared/replay.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { appendMessage, initialThreadState } from "../shared/thread.ts";

const TOTAL = Number(process.env.BENCH_CORE_MESSAGES ?? 1_000_000);
const CHECKPOINTS = [10_000, 100_000, 1_000_000].filter((n) => n <= TOTAL);
const WINDOW = 5_000;

// Mixed lengths, deterministic: short replies (free leaves), paragraphs, and the odd paste.
const SIZES = [20, 60, 140, 300, 700, 1_500, 90, 40, 3_000, 200];
const FILLER =
  "the deploy of billing v2 moved to Tuesday after Ana reviewed INV-2093 and the cache ";
const texts = SIZES.map((n) => FILLER.repeat(Math.ceil(n / FILLER.length)).slice(0, n));

function message(i: number): Message {
  return {
    id: `m${i}`,
    thread: "bench",
    at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    from: i % 2 === 0 ? "Ana" : "north",
    role: i % 2 === 0 ? "user" : "assistant",
    text: `${i}: ${texts[(i * 7) % texts.length] ?? ""}`,
  };
}

// An instant model: a fixed-size line per node, so the figures are the core's own cost. It needs
// no job, so none is built (the worker builds one per model call: bench cost measures them).
const LINE = "s".repeat(300);
const instant = (ref: NodeRef): string => `${lineName(ref)} ${LINE}`;

export async function run(): Promise<Record<string, number>> {
  await Promise.resolve();
  let state = initialThreadState("bench", DEFAULT_SETTINGS);
  const figures: Record<string, number> = {};
  const started = performance.now();
  let windowStart = started;
  for (let i = 0; i < TOTAL; i++) {
    if ((i + 1) % WINDOW === 1) windowStart = performance.now();
    state = appendMessage(state, message(i), i + 1).state;
    state = answerByRef(state, instant);
    const n = i + 1;
    if (CHECKPOINTS.includes(n)) {
      // Time per message over the last WINDOW messages before the checkpoint.
      const us = ((performance.now() - windowStart) * 1000) / WINDOW;
      figures[`core.us_per_message_at_${n / 1000}k`] = Number(us.toFixed(2));
      console.log(
        `  at ${String(n).padStart(9)} messages: ${us.toFixed(2)} µs/message (last ${WINDOW}), outline ${state.outline.length} lines / ${state.outlineBytes} B, tail ${state.tail.length}`,
      );
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const s = state.stats;
  figures["core.messages"] = TOTAL;
  figures["core.messages_per_sec"] = Math.round(TOTAL / seconds);
  figures["core.model_calls_per_message"] = Number(((s.leafJobs + s.mergeJobs) / TOTAL).toFixed(4));
  figures["core.free_nodes_per_message"] = Number(
    ((s.freeLeaves + s.freeMerges) / TOTAL).toFixed(4),
  );
  figures["core.cuts"] = s.cuts;
  figures["core.merges"] = s.merges;
  figures["core.heap_mb"] = Math.round(process.memoryUsage().heapUsed / 1e6);
  console.log(
    `  ${TOTAL} messages in ${seconds.toFixed(1)} s: ${figures["core.messages_per_sec"]} messages/s; model calls/message ${figures["core.model_calls_per_message"]} (leaf ${s.leafJobs}, merge ${s.mergeJobs}); free nodes/message ${figures["core.free_nodes_per_message"]} (leaf ${s.freeLeaves}, merge ${s.freeMerges}); ${s.cuts} cuts, ${s.merges} merges`,
  );
  return figures;
}
