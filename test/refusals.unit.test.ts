import { describe, expect, it } from "vitest";
import { Refusals } from "../services/thread-worker/refusals.ts";

const timing = { terminalBaseMs: 1_000, terminalCapMs: 4_000 };
const node = { level: 0, index: 3 };

describe("Refusals", () => {
  it("makes a refused node wait, longer after each refusal up to the cap (±20%)", () => {
    const r = new Refusals(timing);
    const waits = [1, 2, 3, 4].map((k) => r.refused("t", node, 10_000 * k));
    const [first, second, third, fourth] = waits as [number, number, number, number];
    expect(first).toBeGreaterThanOrEqual(800);
    expect(first).toBeLessThanOrEqual(1_200);
    expect(second).toBeGreaterThanOrEqual(1_600);
    expect(third).toBeGreaterThanOrEqual(3_200);
    expect(fourth).toBeLessThanOrEqual(4_800);
    expect(r.failures("t", node)).toBe(4);
    expect(r.waitMs("t", node, 40_000)).toBe(fourth);
    expect(r.waitMs("t", node, 40_000 + fourth)).toBe(0);
  });

  it("names the thread's first node to try again; a built node or an erased thread waits no more", () => {
    const r = new Refusals(timing);
    const other = { level: 1, index: 0 };
    const a = r.refused("t", node, 0);
    const b = r.refused("t", other, 100);
    expect(r.nextTry("t", 0)).toBe(Math.min(a, 100 + b));
    expect(r.nextTry("u", 0)).toBeUndefined();
    r.built("t", node);
    expect(r.failures("t", node)).toBe(0);
    expect(r.nextTry("t", 0)).toBe(100 + b);
    expect(r.nextTry("t", 100 + b)).toBeUndefined();
    r.forget("t");
    expect(r.failures("t", other)).toBe(0);
    expect(r.waitMs("t", other, 0)).toBe(0);
  });
});
