import { performance } from "node:perf_hooks";

/**
 * How long deliveries are routed in one go before the event loop gets a turn. Deliveries already
 * buffered are iterated in microtasks: a member opening its partitions on a backlog routed
 * thousands in one go, and on a loaded host its heartbeat timer ran seconds late, long enough for
 * the others to judge it dead and take every partition from it.
 */
export const TURN_MS = 20;

/** Yields to the event loop (timers, I/O) once every TURN_MS of routing, shared by all loops. */
export class Turns {
  #since = performance.now();
  #last = this.#since;
  #yielding: Promise<void> | undefined;
  readonly #turnMs: number;

  constructor(turnMs = TURN_MS) {
    this.#turnMs = turnMs;
  }

  /** A promise to await when the current turn has run its time, else undefined (go on). */
  pace(): Promise<void> | undefined {
    if (this.#yielding) return this.#yielding;
    const now = performance.now();
    // Not called for a turn's time: the loops waited for deliveries, a new run starts here.
    if (now - this.#last > this.#turnMs) this.#since = now;
    this.#last = now;
    if (now - this.#since < this.#turnMs) return undefined;
    // setImmediate, never a sleep: set from the poll phase it runs in this loop's check phase,
    // from there in the next loop's, after its timers, so timers wait two turns at most.
    this.#yielding = new Promise<void>((resolve) =>
      setImmediate(() => {
        this.#yielding = undefined;
        this.#since = this.#last = performance.now();
        resolve();
      }),
    );
    return this.#yielding;
  }
}
