import { performance } from "node:perf_hooks";
import { TURN_MS } from "./turns.ts";

/**
 * Runs callbacks together on the next turn of the event loop (setImmediate), one after the other
 * in one synchronous run. Slots started this way issue their first JetStream requests in the same
 * run, so the client writes them to the socket together instead of one write per slot: under
 * load, the socket writes were a sixth of the worker's CPU. A run stops after TURN_MS and goes on
 * after the timers: hundreds of slots given a backlog at once held a member's heartbeat back for
 * seconds on a loaded host (turns.ts).
 */
export class NextTurn {
  #queue: (() => void)[] = [];
  #scheduled = false;

  run(fn: () => void): void {
    this.#queue.push(fn);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#runQueued);
  }

  readonly #runQueued = (): void => {
    const started = performance.now();
    const queue = this.#queue;
    this.#queue = [];
    let i = 0;
    while (i < queue.length) {
      (queue[i++] as () => void)();
      if (i < queue.length && performance.now() - started > TURN_MS) break;
    }
    if (i < queue.length) {
      // Set from the check phase, the next run comes after the next timers phase, at no wait.
      this.#queue = [...queue.slice(i), ...this.#queue];
      setImmediate(this.#runQueued);
      return;
    }
    if (this.#queue.length > 0) setImmediate(this.#runQueued);
    else this.#scheduled = false;
  };
}
