import { performance } from "node:perf_hooks";

/**
 * How long deliveries are routed in one go before the event loop gets a turn. Deliveries already
 * buffered are iterated in microtasks: a member opening its partitions on a backlog routed
 * thousands in one go, and on a loaded host its heartbeat timer ran 4-5 s late, long enough for
 * the others to judge it dead and take every partition from it.
 */
export const TURN_MS = 20;

/** Yields to the event loop (timers, I/O) once every TURN_MS of routing, shared by all loops. */
export class Turns {
  #since = performance.now();
  #yielding: Promise<void> | undefined;
  readonly #turnMs: number;

  constructor(turnMs = TURN_MS) {
    this.#turnMs = turnMs;
  }

  /** A promise to await when the current turn has run its time, else undefined (go on). */
  pace(): Promise<void> | undefined {
    if (this.#yielding) return this.#yielding;
    if (performance.now() - this.#since < this.#turnMs) return undefined;
    this.#yielding = new Promise<void>((resolve) =>
      // A timer, not setImmediate: the loop's timers phase (the heartbeat's) runs before it.
      setTimeout(() => {
        this.#yielding = undefined;
        this.#since = performance.now();
        resolve();
      }, 0),
    );
    return this.#yielding;
  }
}
