// Run by test/heap-limits.unit.test.ts in a process of its own: `on` counts Buffers in the heap
// limit (services/util/heap-limits.ts), `off` leaves V8's default. Holds ~20 MB on the heap, then
// allocates ~750 MB of 150 KB Buffers, 40 alive at a time (a prompt-builder's turns in small),
// and prints the number of full (major) collections meanwhile.
import { constants, PerformanceObserver, type PerformanceEntry } from "node:perf_hooks";
import { countBuffersInHeapLimit } from "../../services/util/heap-limits.ts";

if (process.argv[2] === "on") countBuffersInHeapLimit();
let major = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const { detail } = entry as PerformanceEntry & { detail?: { kind?: number } };
    if (detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
  }
});
observer.observe({ entryTypes: ["gc"] });
const held = Array.from({ length: 200_000 }, (_, i) => ({ i, text: `line ${i}` }));
const alive: Buffer[] = [];
for (let i = 0; i < 5_000; i++) {
  alive.push(Buffer.alloc(150 * 1024, i));
  if (alive.length > 40) alive.shift();
  if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
}
await new Promise((resolve) => setTimeout(resolve, 50));
observer.disconnect();
console.log(JSON.stringify({ major, held: held.length }));
