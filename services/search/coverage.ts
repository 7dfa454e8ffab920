import type { CoveringLine } from "../../shared/search.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { HeldSnapshot, StoredSnapshot } from "../nats/reader.ts";

/** Which outline lines cover which positions: all a hit needs of the thread's snapshot. */
export interface Coverage {
  lines: readonly CoveringLine[];
  boundary: number;
}

/** Threads whose coverage is kept; each holds two numbers a line (a few KB for a long thread). */
export const COVERAGE_THREADS = 1_000;

interface Kept {
  revision: number;
  bytes: number;
  /** The snapshot's newest tail message, by which the reader tells the revision still stands. */
  proof: HeldSnapshot["proof"];
  coverage: Coverage;
}

/**
 * The coverage of each thread's snapshot, kept by KV revision: a query on a thread whose snapshot
 * has not changed since the last one parses nothing (a long thread's snapshot is ~100 KB of JSON,
 * whose parse is about a tenth of a query), and can ask by revision instead of reading those
 * bytes again (`held`). The least recently asked thread goes first.
 */
export class CoverageCache {
  readonly #kept = new Map<string, Kept>();
  readonly #max: number;

  constructor(max = COVERAGE_THREADS) {
    this.#max = max;
  }

  /** The revision kept for the thread, with its proof, for `ThreadReader.storedSnapshotSince`. */
  held(thread: string): HeldSnapshot | undefined {
    const kept = this.#kept.get(thread);
    return kept && { revision: kept.revision, proof: kept.proof };
  }

  /** The coverage kept for the thread, once the reader said its revision is still the value. */
  unchanged(thread: string): Coverage | undefined {
    const kept = this.#kept.get(thread);
    if (!kept) return undefined;
    this.#kept.delete(thread);
    this.#kept.set(thread, kept);
    return kept.coverage;
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
    // A snapshot from before tailSeqs has no proof: it is then read whole at each query.
    const { tail, tailSeqs } = snapshot as Partial<OutlineSnapshot>;
    const seq = tailSeqs?.at(-1);
    const id = tail?.at(-1);
    const proof = seq === undefined || id === undefined ? undefined : { seq, id };
    this.#kept.set(thread, {
      revision: stored.revision,
      bytes: stored.bytes.length,
      proof,
      coverage,
    });
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
