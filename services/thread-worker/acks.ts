import type { JsMsg } from "@nats-io/jetstream";
import type { WorkerContext } from "./worker-context.ts";

/**
 * A thread's chat events applied and not yet acknowledged, and when the save that stores them
 * is due. An event is acknowledged only once a stored state includes it. While the consumer has
 * a backlog, events wait up to saveLingerMs (from the oldest) so one save stores, and then
 * acknowledges, all that arrived meanwhile; caught up, a burst is saved at once.
 */
export class AckLedger {
  readonly #ctx: WorkerContext;
  readonly #due: () => void;
  #unacked: JsMsg[] = [];
  /** When the oldest chat event not yet stored was applied; undefined when there is none. */
  #unsavedSince: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #at = 0;

  /** `due` is called when a scheduled save is due. */
  constructor(ctx: WorkerContext, due: () => void) {
    this.#ctx = ctx;
    this.#due = due;
  }

  /** Applied chat events not yet stored. */
  get unsaved(): boolean {
    return this.#unsavedSince !== undefined;
  }

  /** When the oldest of them was applied. */
  get unsavedSince(): number | undefined {
    return this.#unsavedSince;
  }

  get count(): number {
    return this.#unacked.length;
  }

  /** Events of a burst, listed before it runs so a slot that stops knows what it gives up. */
  hold(msg: JsMsg): void {
    this.#unacked.push(msg);
  }

  /** The burst changed the state: its events wait for a save from now. */
  applied(): void {
    this.#unsavedSince ??= Date.now();
  }

  /**
   * The events the next save stores; `putBack` them if it fails. A save already scheduled is for
   * these events: left, it would fire within the linger of the next ones and save them early
   * (half the timed saves of bench e2e young did, a second save for fewer events).
   */
  takeForSave(): { acks: JsMsg[]; hadChat: boolean } {
    const taken = { acks: this.#unacked, hadChat: this.#unsavedSince !== undefined };
    this.#unacked = [];
    this.#unsavedSince = undefined;
    this.cancel();
    return taken;
  }

  /** A save that failed: its events are still this slot's to give up when it ends. */
  putBack(acks: JsMsg[]): void {
    this.#unacked = acks.concat(this.#unacked);
  }

  /** Nothing applied is unsaved: every event handled so far is acknowledged. */
  ackStored(): void {
    this.ack(this.takeForSave().acks);
  }

  ack(msgs: JsMsg[]): void {
    for (const msg of msgs) msg.ack();
    this.#ctx.deliveries.released(msgs.length);
  }

  /** Gives every event up unacknowledged (they come back after the ack wait); how many. */
  dropAll(): number {
    const dropped = this.#unacked.length;
    this.#unacked = [];
    return dropped;
  }

  /** Unsaved chat events to save now: no backlog, waited long enough, or many waiting. */
  lingerOver(): boolean {
    if (this.#unsavedSince === undefined) return false;
    return (
      !this.#ctx.deliveries.behind ||
      Date.now() - this.#unsavedSince >= this.lingerMs() ||
      this.#unacked.length >= this.#ctx.maxBurst
    );
  }

  /**
   * How long chat events wait for more to share their save: half as long while the worker holds
   * so many unacknowledged that the consumer is about to stop delivering (the oldest go first,
   * fresh ones still gather more). Waiting out the whole linger then would leave the worker idle
   * with work in the stream.
   */
  lingerMs(): number {
    return this.#ctx.saveLingerMs * this.#ctx.deliveries.lingerShare;
  }

  /**
   * A save when the linger of the oldest unsaved event ends, else (summaries alone) after
   * `idleMs` (saveDelayMs by default).
   */
  scheduleSave(idleMs: number = this.#ctx.saveDelayMs): void {
    const since = this.#unsavedSince;
    this.#schedule(since !== undefined ? since + this.lingerMs() - Date.now() : idleMs);
  }

  /** The save is due now (the worker caught up: no more events will share it). */
  saveNow(): void {
    this.cancel();
    this.#due();
  }

  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** A save in `ms` at the latest (an earlier one already scheduled stands). */
  #schedule(ms: number): void {
    const at = Date.now() + Math.max(0, ms);
    if (this.#timer && this.#at <= at) return;
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#due();
      },
      Math.max(0, ms),
    );
  }
}
