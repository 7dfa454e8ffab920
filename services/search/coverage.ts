import type { CoveringLine } from "../../shared/search.ts";
import type { StoredSnapshot } from "../nats/reader.ts";

/** Which outline lines cover which positions: all a hit needs of the thread's snapshot. */
export interface Coverage {
  lines: readonly CoveringLine[];
  boundary: number;
}

/** Threads whose coverage is kept; each holds two numbers a line (a few KB for a long thread). */
export const COVERAGE_THREADS = 1_000;

/**
 * The coverage of each thread's snapshot, kept by KV revision: a query on a thread whose snapshot
 * has not changed since the last one parses nothing (a long thread's snapshot is ~100 KB of JSON,
 * whose parse is about a tenth of a query). The least recently asked thread goes first.
 */
export class CoverageCache {
  readonly #kept = new Map<string, { revision: number; bytes: number; coverage: Coverage }>();
  readonly #max: number;

  constructor(max = COVERAGE_THREADS) {
    this.#max = max;
  }

  /** The coverage of `stored`, parsed only when its revision is not the one kept. */
  of(thread: string, stored: StoredSnapshot | undefined): Coverage {
    if (!stored) {
      this.#kept.delete(thread);
      return { lines: [], boundary: 0 };
    }
    const kept = this.#kept.get(thread);
    this.#kept.delete(thread);
    // The length too: a bucket made anew starts its revisions again.
    if (kept?.revision === stored.revision && kept.bytes === stored.bytes.length) {
      this.#kept.set(thread, kept);
      return kept.coverage;
    }
    const snapshot = stored.parse();
    const coverage: Coverage = {
      lines: snapshot.lines.map(({ id, n }) => ({ id, n })),
      boundary: snapshot.boundary,
    };
    this.#kept.set(thread, { revision: stored.revision, bytes: stored.bytes.length, coverage });
    if (this.#kept.size > this.#max) {
      const oldest = this.#kept.keys().next().value;
      if (oldest !== undefined) this.#kept.delete(oldest);
    }
    return coverage;
  }

  get size(): number {
    return this.#kept.size;
  }
}
