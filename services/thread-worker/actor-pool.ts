/** What the pool needs of a thread's slot (thread-slot.ts; a model of it in the unit tests). */
export interface PooledSlot {
  readonly thread: string;
  /**
   * Loaded and at rest: nothing queued, applied and unsaved, running, summarizing or being
   * erased. Only such a slot is passivated to make room, so passivation has nothing to finish.
   */
  readonly evictable: boolean;
  /** A passivation was asked and has neither ended the slot nor been given up. */
  readonly passivating: boolean;
  /** Asks the slot to save and leave memory through its usual passivation; false when busy. */
  passivate(): boolean;
}

export interface PoolParts<S extends PooledSlot, A> {
  /** Live slots at most (OUTLINE_MAX_ACTORS); Infinity for no cap. */
  cap: number;
  create(thread: string): S;
  /** Hands an action (a delivered event, a wake) to the thread's slot. */
  give(slot: S, action: A): void;
  /** Runs `fn` once the current turn's deliveries are routed. */
  later(fn: () => void): void;
  /** A slot was passivated to make room (counted by the caller). */
  evicted(slot: S): void;
}

/**
 * The live slots, least recently used first, under a cap. A thread without a slot gets one if
 * there is room; otherwise its actions wait here, in order, while the least recently used
 * slots at rest are passivated, and it comes in as one of them ends. When every slot is busy,
 * intake waits: its events stay unacknowledged, the consumer stops at its max_ack_pending, and
 * the next slot to come to rest makes room.
 */
export class ActorPool<S extends PooledSlot, A> {
  readonly #p: PoolParts<S, A>;
  /** Insertion order is use order: a slot is moved to the end each time it is used. */
  readonly #slots = new Map<string, S>();
  /** Threads waiting for room, first come first in, each with its actions in order. */
  readonly #waiting = new Map<string, A[]>();
  /** Slots asked to passivate for room: counted as room to come while they still passivate. */
  readonly #evicting = new Set<S>();
  /**
   * A scan found no slot at rest: until room is no longer needed, each slot that comes to rest
   * is the least recently used at rest, and is taken without a scan.
   */
  #starved = false;
  #scheduled = false;
  readonly #run = () => {
    this.#scheduled = false;
    this.makeRoom();
  };

  constructor(parts: PoolParts<S, A>) {
    this.#p = parts;
  }

  get cap(): number {
    return this.#p.cap;
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Threads whose actions wait for room. */
  get waiting(): number {
    return this.#waiting.size;
  }

  slots(): IterableIterator<S> {
    return this.#slots.values();
  }

  peek(thread: string): S | undefined {
    return this.#slots.get(thread);
  }

  /** An action for `thread`: to its slot, made if there is room, else held until there is. */
  use(thread: string, action: A): void {
    const slot = this.#slots.get(thread);
    if (slot) {
      // Most recently used: to the end of the order.
      this.#slots.delete(thread);
      this.#slots.set(thread, slot);
      this.#p.give(slot, action);
      return;
    }
    const held = this.#waiting.get(thread);
    if (held) {
      held.push(action);
      return;
    }
    if (this.#slots.size < this.#p.cap) {
      this.#p.give(this.#admit(thread), action);
      return;
    }
    this.#waiting.set(thread, [action]);
    if (!this.#starved) this.#schedule();
  }

  /** `slot` ended: it leaves, and threads waiting come in while there is room. */
  ended(slot: S): void {
    this.#evicting.delete(slot);
    if (this.#slots.get(slot.thread) === slot) this.#slots.delete(slot.thread);
    this.#admitWaiting();
  }

  /** `slot` came to rest (its loop has nothing left to do). */
  rested(slot: S): void {
    if (this.#waiting.size === 0 || !this.#starved) return;
    if (this.#need() > 0) this.#evict(slot);
    else this.#starved = false;
  }

  /**
   * Passivates the least recently used slots at rest, as many as the waiting threads need; also
   * run now and then by the worker, whatever came to rest unannounced.
   */
  makeRoom(): void {
    let need = this.#need();
    this.#starved = false;
    if (need <= 0) return;
    for (const slot of this.#slots.values()) {
      if (!this.#evict(slot)) continue;
      if (--need === 0) return;
    }
    this.#starved = true;
  }

  /**
   * Brings in every waiting thread `which` selects, over the cap: a drain applies their events
   * (and saves them) rather than giving them up. Returns the slots made.
   */
  admitAll(which: (thread: string) => boolean = () => true): S[] {
    const made: S[] = [];
    for (const [thread, actions] of [...this.#waiting]) {
      if (!which(thread)) continue;
      this.#waiting.delete(thread);
      const slot = this.#admit(thread);
      made.push(slot);
      for (const action of actions) this.#p.give(slot, action);
    }
    return made;
  }

  /** Gives up every waiting action (a crash or hard stop); returns them. */
  dropWaiting(): A[] {
    const dropped = [...this.#waiting.values()].flat();
    this.#waiting.clear();
    return dropped;
  }

  /** Forgets every slot (a hard stop ended them all). */
  clear(): void {
    this.#slots.clear();
    this.#evicting.clear();
  }

  /** Slots to passivate for the waiting threads, beyond those already passivating. */
  #need(): number {
    let passivating = 0;
    for (const slot of this.#evicting) {
      if (slot.passivating) passivating++;
      else this.#evicting.delete(slot);
    }
    return this.#waiting.size + this.#slots.size - this.#p.cap - passivating;
  }

  #evict(slot: S): boolean {
    if (this.#evicting.has(slot) || !slot.evictable || !slot.passivate()) return false;
    this.#evicting.add(slot);
    this.#p.evicted(slot);
    return true;
  }

  #admit(thread: string): S {
    const slot = this.#p.create(thread);
    this.#slots.set(thread, slot);
    return slot;
  }

  #admitWaiting(): void {
    for (const [thread, actions] of this.#waiting) {
      if (this.#slots.size >= this.#p.cap) return;
      this.#waiting.delete(thread);
      const slot = this.#admit(thread);
      for (const action of actions) this.#p.give(slot, action);
    }
    this.#starved = false;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#p.later(this.#run);
  }
}
