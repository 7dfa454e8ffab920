import { describe, expect, it } from "vitest";
import { NextTurn } from "../services/thread-worker/next-turn.ts";
import { Turns, TURN_MS } from "../services/thread-worker/turns.ts";

// Routing a backlog already buffered runs in microtasks: without turns, no timer (a member's
// heartbeat) runs until the whole backlog is routed.
async function* buffered(count: number) {
  for (let i = 0; i < count; i++) yield await Promise.resolve(i);
}

function busy(ms: number) {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe("Turns", () => {
  it("lets a timer due meanwhile run while a buffered backlog is routed", async () => {
    const turns = new Turns();
    const count = 5 * TURN_MS;
    let routed = 0;
    let firedAt: number | undefined;
    setTimeout(() => (firedAt = routed), 1);
    for await (const _ of buffered(count)) {
      busy(2);
      routed++;
      const turn = turns.pace();
      if (turn) await turn;
    }
    // Within about one turn's routing of being due, not after the backlog.
    expect(firedAt).toBeDefined();
    expect(firedAt as number).toBeLessThan(count / 2);
  });

  it("lets loops that share it yield together, and go on at once in a short turn", () => {
    const turns = new Turns(60_000);
    expect(turns.pace()).toBeUndefined();
    const zero = new Turns(0);
    busy(1);
    const first = zero.pace();
    expect(first).toBeInstanceOf(Promise);
    expect(zero.pace()).toBe(first);
  });

  it("runs slots kicked together in turns of TURN_MS, timers due meanwhile between them", async () => {
    const next = new NextTurn();
    const count = 5 * TURN_MS;
    let ran = 0;
    const all = new Promise<void>((resolve) => {
      for (let i = 0; i < count; i++)
        next.run(() => {
          busy(2);
          if (++ran === count) resolve();
        });
    });
    let firedAt: number | undefined;
    setTimeout(() => (firedAt = ran), 1);
    await all;
    expect(firedAt).toBeDefined();
    expect(firedAt as number).toBeLessThan(count / 2);
    // Kicked during a run: run in a later one, none lost.
    let later = false;
    next.run(() => next.run(() => (later = true)));
    await new Promise((r) => setTimeout(r, 20));
    expect(later).toBe(true);
  });
});
