import { setFlagsFromString } from "node:v8";

/**
 * Counts Buffers' bytes outside V8's heap in its heap limit. Without it, every ~64 MB of new
 * off-heap bytes starts a full mark-compact of its own: a prompt-builder that reads a ~150 KB
 * snapshot and writes a ~280 KB prompt a turn ran one every ~150 turns, pauses of 6-25 ms, the
 * tail of its real turns. V8 reads the flag whenever it sets a limit, so setting it at start holds.
 */
export function countBuffersInHeapLimit(): void {
  setFlagsFromString("--external-memory-accounted-in-global-limit");
}
