import { mostDuePair } from "../../shared/batch.ts";
import type { ThreadState } from "../../shared/thread.ts";
import type { Logger } from "./log.ts";

/** Threads remembered as told at most; past it the longest told is forgotten (told again). */
const MAX_THREADS = 10_000;

/** What a line adds besides its text, at most: `id+n|` for ids up to 10^9, and the newline. */
const LINE_OVERHEAD = 24;

/** Levels of the outline's tree for `boundary` messages: one line each, at most, at its floor. */
function levelsOf(boundary: number): number {
  return Math.max(1, Math.ceil(Math.log2(boundary + 1)));
}

/**
 * The outline's floor (docs/settings.md): merges pair two lines of one level (SPEC §4), so an
 * outline holding at most one line per level cannot get smaller, whatever HISTORY_OUTLINE says. A
 * thread whose outline[1] is below that (set low, or lowered for a thread that grew) stays above
 * it after every batch. The core keeps its rules; the worker says so once per thread, with what to
 * do. Told threads are forgotten when their outline is back within outline[1] (a later relapse is
 * told again), and past MAX_THREADS.
 */
export class OutlineFloor {
  readonly #told = new Set<string>();
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** After a burst that applied cuts (each with its merge batch, if any): `state` as it ended. */
  afterCuts(thread: string, state: ThreadState): void {
    const [low, high] = state.settings.outline;
    if (state.outlineBytes <= high) {
      if (this.#told.size > 0) this.#told.delete(thread);
      return;
    }
    if (this.#told.has(thread)) return;
    // A sibling pair left: the next cut's batch can still merge (settings lowered since the cut).
    if (mostDuePair(state.outline, state.boundary) >= 0) return;
    if (this.#told.size >= MAX_THREADS) {
      const oldest = this.#told.values().next();
      if (!oldest.done) this.#told.delete(oldest.value);
    }
    this.#told.add(thread);
    const { line } = state.settings;
    const levels = levelsOf(state.boundary);
    const floor = levels * (Math.floor(line * 1.25) + LINE_OVERHEAD);
    const suggested = Math.max(floor, line * 2);
    this.#log.warn(
      `thread '${thread}': its outline is ${state.outlineBytes} bytes, over HISTORY_OUTLINE's ${high} (outline[1]), and none of its ${state.outline.length} lines can merge (merges pair two lines of one level; it holds one line per level for ${state.boundary} messages): it stays over until the thread grows. Set HISTORY_OUTLINE to at least ${suggested},${suggested * 2}: up to ${levels} levels of ${line}-byte lines now, one level more each time the thread doubles (docs/settings.md, "The outline's floor")`,
      {
        thread,
        bytes: state.outlineBytes,
        outline: [low, high],
        lines: state.outline.length,
        messages: state.boundary,
      },
    );
  }
}
