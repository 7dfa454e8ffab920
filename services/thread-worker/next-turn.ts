/**
 * Runs callbacks together on the next turn of the event loop (setImmediate), one after the other
 * in one synchronous run. Slots started this way issue their first JetStream requests in the same
 * run, so the client writes them to the socket together instead of one write per slot: under
 * load, the socket writes were a sixth of the worker's CPU.
 */
export class NextTurn {
  #queue: (() => void)[] = [];
  #scheduled = false;

  run(fn: () => void): void {
    this.#queue.push(fn);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const queue = this.#queue;
      this.#queue = [];
      for (const f of queue) f();
    });
  }
}
