// What the e2e and instances benches wait for: threads whose KV snapshot shows their last message
// with nothing pending, as the bucket announces writes (one watch for the warm-up and the load).
import type { KvWatchEntry } from "@nats-io/kv";
import { performance } from "node:perf_hooks";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";

export class SettledThreads {
  /** Highest sequence each thread's snapshot reflects with nothing pending. */
  readonly #shown = new Map<string, number>();
  /** Each thread's last snapshot, in words (named when a run stalls). */
  readonly #lastSeen = new Map<string, string>();
  #targets = new Map<string, number>();
  #counted = new Set<string>();
  #resolve: () => void = () => {};
  /** When the last snapshot was written (a run that stops writing is stuck). */
  lastPut = performance.now();
  /** When each awaited thread got done, in order (BENCH_E2E_TIMELINE). */
  doneAt: number[] = [];

  /** One write the bucket announced. */
  observe(e: KvWatchEntry): void {
    if (e.operation !== "PUT") return;
    const snapshot = e.json<{ seq: number; pending: OutlineSnapshot["pending"] }>();
    // At rest: nothing asked or waiting. Nodes held for their summarizer group (`held`) wait by
    // design for the group to fill or a cut to need them, so they do not count.
    const { jobs, cuts, merging } = snapshot.pending;
    const settled = jobs === 0 && cuts === 0 && !merging;
    this.lastPut = performance.now();
    this.#lastSeen.set(e.key, `seq ${snapshot.seq}, pending ${JSON.stringify(snapshot.pending)}`);
    this.#shown.set(e.key, settled ? Math.max(this.#shown.get(e.key) ?? 0, snapshot.seq) : 0);
    this.#count(e.key);
  }

  /**
   * Resolves once every thread of `targets` (thread → its last sequence) has shown it settled;
   * a thread counts once, whatever comes later.
   */
  until(targets: Map<string, number>): Promise<void> {
    this.#targets = targets;
    this.#counted = new Set();
    this.doneAt = [];
    const done = new Promise<void>((resolve) => (this.#resolve = resolve));
    for (const thread of targets.keys()) this.#count(thread);
    if (this.#counted.size === targets.size) this.#resolve();
    return done;
  }

  /** The awaited threads not done yet, the first few named with their last snapshot. */
  waiting(): { count: number; named: string[] } {
    const waiting = [...this.#targets.keys()].filter((t) => !this.#counted.has(t));
    const named = waiting
      .slice(0, 5)
      .map(
        (t) => `${t} (want seq ${this.#targets.get(t)}; last ${this.#lastSeen.get(t) ?? "none"})`,
      );
    return { count: waiting.length, named };
  }

  #count(thread: string): void {
    const want = this.#targets.get(thread);
    if (want === undefined || this.#counted.has(thread)) return;
    if ((this.#shown.get(thread) ?? 0) < want) return;
    this.#counted.add(thread);
    this.doneAt.push(performance.now());
    if (this.#counted.size === this.#targets.size) this.#resolve();
  }
}
