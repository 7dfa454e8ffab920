import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ActorPool, type PooledSlot } from "../services/thread-worker/actor-pool.ts";

/**
 * A thread's slot as the pool sees it, with what a real slot does to its events: queued events
 * are applied by a step, applied events are saved by another, a summary job keeps it busy, a
 * passivation ends it only at rest. Stored state survives the slot; a new slot loads it.
 */
class ModelSlot implements PooledSlot {
  readonly thread: string;
  queue: number[] = [];
  applied: number[];
  unsaved = false;
  jobs = 0;
  passivateAsked = false;
  ended = false;
  readonly #world: World;

  constructor(world: World, thread: string) {
    this.#world = world;
    this.thread = thread;
    this.applied = [...(world.stored.get(thread) ?? [])];
    if (world.stored.has(thread)) world.reloads++;
  }

  get evictable(): boolean {
    return (
      !this.ended &&
      !this.passivateAsked &&
      this.queue.length === 0 &&
      !this.unsaved &&
      this.jobs === 0
    );
  }

  get passivating(): boolean {
    return this.passivateAsked && !this.ended;
  }

  passivate(): boolean {
    if (!this.evictable) {
      this.#world.violations.push(`asked ${this.thread} to passivate while busy`);
      return false;
    }
    // Least recently used of those at rest: none at rest was used before it.
    const mine = this.#world.lastUse.get(this.thread) ?? 0;
    for (const other of this.#world.pool.slots()) {
      if (other === this || !other.evictable) continue;
      if ((this.#world.lastUse.get(other.thread) ?? 0) < mine) {
        this.#world.violations.push(`passivated ${this.thread} before ${other.thread}`);
      }
    }
    this.passivateAsked = true;
    this.#world.passivations++;
    return true;
  }

  /** One turn of the slot's loop; true if it did something. */
  step(): boolean {
    if (this.ended) return false;
    if (this.queue.length > 0) {
      this.applied.push(...this.queue.splice(0));
      this.unsaved = true;
      // A passivation given up: events came meanwhile (as a real slot's loop does).
      this.passivateAsked = false;
      return true;
    }
    if (this.unsaved) {
      this.#world.stored.set(this.thread, [...this.applied]);
      this.unsaved = false;
      return true;
    }
    if (this.passivateAsked && this.jobs === 0) {
      this.ended = true;
      this.#world.pool.ended(this);
      return true;
    }
    return false;
  }
}

interface World {
  pool: ActorPool<ModelSlot, number>;
  stored: Map<string, number[]>;
  lastUse: Map<string, number>;
  later: (() => void)[];
  violations: string[];
  passivations: number;
  reloads: number;
  clock: number;
}

function world(cap: number): World {
  const w = {
    stored: new Map(),
    lastUse: new Map(),
    later: [],
    violations: [],
    passivations: 0,
    reloads: 0,
    clock: 0,
  } as unknown as World;
  w.pool = new ActorPool<ModelSlot, number>({
    cap,
    create: (thread) => new ModelSlot(w, thread),
    give: (slot, event) => {
      w.lastUse.set(slot.thread, ++w.clock);
      slot.queue.push(event);
    },
    later: (fn) => w.later.push(fn),
    evicted: () => {},
  });
  return w;
}

type Op =
  | { kind: "deliver"; thread: number }
  | { kind: "step"; pick: number }
  | { kind: "job"; pick: number; start: boolean }
  | { kind: "turn" }
  | { kind: "sweep" };

const ops = (threads: number) =>
  fc.array(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant("deliver" as const),
          thread: fc.nat(threads - 1),
        }),
      },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant("step" as const), pick: fc.nat() }) },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant("job" as const),
          pick: fc.nat(),
          start: fc.boolean(),
        }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant("turn" as const) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("sweep" as const) }) },
    ),
    { maxLength: 300 },
  );

function live(w: World): ModelSlot[] {
  return [...w.pool.slots()];
}

/** A slot whose loop did something comes to rest afterwards, and says so. */
function stepSlot(w: World, slot: ModelSlot): boolean {
  const did = slot.step();
  if (did && !slot.ended && slot.queue.length === 0 && !slot.unsaved) w.pool.rested(slot);
  return did;
}

function runTurn(w: World): void {
  for (const fn of w.later.splice(0)) fn();
}

/** Every slot's loop runs until none has anything left, jobs end, the turn's work runs. */
function settle(w: World): void {
  for (let round = 0; round < 10_000; round++) {
    runTurn(w);
    let did = false;
    for (const slot of live(w)) {
      if (slot.jobs > 0) {
        slot.jobs = 0;
        did = true;
        if (slot.evictable) w.pool.rested(slot);
      }
      did = stepSlot(w, slot) || did;
    }
    if (did || w.later.length > 0) continue;
    w.pool.makeRoom();
    if (w.later.length === 0 && !live(w).some((s) => s.passivating)) return;
  }
  throw new Error("the model did not settle");
}

function play(cap: number, threads: number, script: Op[]): World {
  const w = world(cap);
  const delivered = new Map<string, number[]>();
  let next = 0;
  for (const op of script) {
    if (op.kind === "deliver") {
      const thread = `t${op.thread}`;
      const event = next++;
      delivered.set(thread, [...(delivered.get(thread) ?? []), event]);
      w.pool.use(thread, event);
    } else if (op.kind === "step" || op.kind === "job") {
      const slots = live(w);
      const slot = slots[op.pick % Math.max(1, slots.length)];
      if (!slot) continue;
      if (op.kind === "step") stepSlot(w, slot);
      else if (op.start) slot.jobs++;
      else if (slot.jobs > 0) {
        slot.jobs--;
        // Its summary comes back through the loop, which then rests.
        if (slot.jobs === 0 && slot.evictable) w.pool.rested(slot);
      }
    } else if (op.kind === "turn") runTurn(w);
    else w.pool.makeRoom();
    expect(w.pool.size).toBeLessThanOrEqual(cap);
  }
  settle(w);
  expect(w.violations).toEqual([]);
  // Intake settled: nothing waits, the cap holds.
  expect(w.pool.waiting).toBe(0);
  expect(w.pool.size).toBeLessThanOrEqual(cap);
  // Every event applied exactly once, in order, across passivations and re-loads.
  for (let t = 0; t < threads; t++) {
    const thread = `t${t}`;
    const slot = w.pool.peek(thread);
    const final = slot ? slot.applied : (w.stored.get(thread) ?? []);
    expect(final).toEqual(delivered.get(thread) ?? []);
  }
  return w;
}

describe("ActorPool: live actors under a cap, least recently used at rest passivated", () => {
  it("never exceeds the cap, passivates only slots at rest, least recently used first, and every event is applied exactly once", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc
          .integer({ min: 1, max: 12 })
          .chain((threads) => fc.tuple(fc.constant(threads), ops(threads))),
        (cap, [threads, script]) => {
          play(cap, threads, script);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("past the cap, a new thread's events wait while every slot is busy, and come in once one is at rest", () => {
    const w = world(2);
    w.pool.use("a", 1);
    w.pool.use("b", 2);
    const [a, b] = live(w) as [ModelSlot, ModelSlot];
    a.step();
    b.step();
    // Both applied and unsaved: busy. c waits.
    w.pool.use("c", 3);
    w.pool.use("c", 4);
    runTurn(w);
    expect(w.pool.size).toBe(2);
    expect(w.pool.waiting).toBe(1);
    expect(w.passivations).toBe(0);
    // b is saved and comes to rest: it is taken (a, older, is still busy), then c comes in.
    stepSlot(w, b);
    expect(b.passivateAsked).toBe(true);
    expect(a.passivateAsked).toBe(false);
    stepSlot(w, b);
    expect(b.ended).toBe(true);
    expect(w.pool.waiting).toBe(0);
    expect(w.pool.peek("c")?.queue).toEqual([3, 4]);
    expect(w.violations).toEqual([]);
  });

  it("with room to spare, nothing is passivated and nothing waits", () => {
    const w = play(50, 10, [
      ...Array.from({ length: 30 }, (_, i) => ({ kind: "deliver" as const, thread: i % 10 })),
    ]);
    expect(w.passivations).toBe(0);
    expect(w.reloads).toBe(0);
  });

  it("a cyclic load over more threads than the cap re-loads each thread it comes back to", () => {
    const threads = 8;
    const script: Op[] = [];
    for (let round = 0; round < 3; round++)
      for (let t = 0; t < threads; t++) {
        script.push({ kind: "deliver", thread: t }, { kind: "step", pick: 0 });
      }
    const w = world(3);
    // Each slot applies and saves its event before the next thread comes (a real worker's
    // linger), so the least recently used is always at rest.
    for (const op of script) {
      if (op.kind === "deliver") w.pool.use(`t${op.thread}`, op.thread);
      else settle(w);
    }
    settle(w);
    expect(w.violations).toEqual([]);
    expect(w.pool.size).toBe(3);
    // Rounds 2 and 3 find every thread passivated: 16 re-loads.
    expect(w.reloads).toBe(2 * threads);
  });
});
