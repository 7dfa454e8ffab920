import { describe, expect, it } from "vitest";
import type { Logger } from "../services/thread-worker/log.ts";
import { Refusals } from "../services/thread-worker/refusals.ts";
import { RETRY_REPEAT_MS, RetryLog } from "../services/thread-worker/retry-log.ts";

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

  it("a key refused for every node is told once, at error level with its fix, and its recovery once", () => {
    const clock = { now: 0 };
    const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    const log: Logger = {
      info: (message, fields) => lines.push({ level: "info", message, ...(fields && { fields }) }),
      warn: (message, fields) => lines.push({ level: "warn", message, ...(fields && { fields }) }),
      error: (message, fields) =>
        lines.push({ level: "error", message, ...(fields && { fields }) }),
    };
    const retries = new RetryLog(log, () => clock.now);
    const r = new Refusals(timing, retries);
    const threads = Array.from({ length: 10 }, (_, i) => `t${i}`);
    const nodes = [node, { level: 0, index: 4 }];
    const refuseAll = () => {
      for (const t of threads)
        for (const n of nodes)
          r.refused(t, n, clock.now, {
            what: `summarize ${n.index}+1 of thread '${t}'`,
            error: new Error(`401 Incorrect API key provided for ${t}.${n.index}`),
            fix: "fix OPENAI_API_KEY",
          });
    };
    refuseAll();
    clock.now += 5_000;
    refuseAll();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: "error", fields: { fix: "fix OPENAI_API_KEY" } });
    expect(lines[0]?.message).toMatch(/^summarize 3\+1 of thread 't0' failed \(attempt 1\)/);
    // Still refused after RETRY_REPEAT_MS: told again, with how many nodes wait.
    clock.now += RETRY_REPEAT_MS;
    refuseAll();
    expect(lines).toHaveLength(2);
    expect(lines[1]?.message).toMatch(/^20 still failing the same way after 35\.0 s/);
    // An erased thread's nodes leave without a recovery; the others are built.
    r.forget("t0");
    for (const t of threads.slice(1)) for (const n of nodes) r.built(t, n);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ level: "info" });
    expect(lines[2]?.message).toMatch(
      /^recovered: 18 that failed this way succeeded, after 4 attempts at most/,
    );
    expect(retries.failing).toBe(0);
  });
});
