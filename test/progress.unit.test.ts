import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createProgress } from "../services/cli/replay/progress.ts";

// The progress of replay and import: a redrawn bar on a terminal, plain lines in a log.

/**
 * Runs ticks of the given sizes, each `stepMs` after the last, on a clock of the test's own;
 * `total` undefined: never told one (stdin).
 */
function run(tty: boolean, total: number | undefined, ticks: number[], stepMs: number): string[] {
  let t = 0;
  const written: string[] = [];
  const p = createProgress(
    { isTTY: tty, columns: 100, write: (text) => written.push(text) },
    "replay",
    () => t,
    1_000,
  );
  if (total !== undefined) p.total(total);
  for (const n of ticks) {
    t += stepMs;
    p.tick(n);
  }
  t += stepMs;
  p.done();
  return written;
}

const counted = (line: string): string | undefined => /(\d+\/\d+) messages/.exec(line)?.[1];

describe("progress", () => {
  it("in a log: at most a line a second, never the same count twice, the total last", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 50 }),
        fc.array(fc.integer({ min: 1, max: 20 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 1_500 }),
        (total, ticks, stepMs) => {
          const lines = run(false, total, ticks, stepMs);
          const sum = ticks.reduce((a, b) => a + b, 0);
          const expected = Math.max(total, sum);
          if (expected === 0) {
            expect(lines).toEqual([]);
            return;
          }
          expect(lines.length).toBeGreaterThan(0);
          for (const line of lines) expect(line).toMatch(/^replay: .* \(\d+%\)\n$/);
          const counts = lines.map(counted);
          for (let i = 1; i < counts.length; i++) expect(counts[i]).not.toBe(counts[i - 1]);
          expect(counts.at(-1)).toBe(`${sum}/${expected}`);
          // One line per elapsed second at most, plus the first and the last.
          expect(lines.length).toBeLessThanOrEqual(
            2 + Math.floor(((ticks.length + 1) * stepMs) / 1_000),
          );
        },
      ),
    );
  });

  it("a short run in a log is one line", () => {
    expect(run(false, 1, [1], 5)).toEqual(["replay: 1/1 messages  200 msg/s  ETA 0s (100%)\n"]);
  });

  it("with nothing to count writes nothing, on a terminal or in a log (no 0/0 line)", () => {
    expect(run(false, 0, [0], 5)).toEqual([]);
    expect(run(true, 0, [0], 5)).toEqual([]);
  });

  it("without a total (a pipe): the count and rate, no denominator, percentage or ETA", () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 20 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 1_500 }),
        (tty, ticks, stepMs) => {
          const written = run(tty, undefined, ticks, stepMs);
          const sum = ticks.reduce((a, b) => a + b, 0);
          if (sum === 0) {
            expect(written).toEqual([]);
            return;
          }
          const shape = tty
            ? /^\rreplay \d+ messages? {2}\d+ msg\/s<clear>\n?$/
            : /^replay: \d+ messages? {2}\d+ msg\/s\n$/;
          // On a terminal each redraw clears what is left of a longer line before it.
          for (const line of written) expect(line.replace("\u001b[K", "<clear>")).toMatch(shape);
          const last = written.at(-1) ?? "";
          expect(/(\d+) messages?/.exec(last)?.[1]).toBe(String(sum));
          if (tty) expect(last.endsWith("\n")).toBe(true);
        },
      ),
    );
    // The pipe's `1/1` then `4/4` (100% at each line): now what is known.
    expect(run(false, undefined, [1, 3], 1_000)).toEqual([
      "replay: 1 message  1 msg/s\n",
      "replay: 4 messages  2 msg/s\n",
    ]);
  });

  it("on a terminal the bar ends at 100% with a newline, even when nothing moved since", () => {
    const out = run(true, 1, [1], 5).join("");
    expect(out).toMatch(/\rreplay \[#+\] 100% 1\/1 messages {2}\d+ msg\/s {2}ETA 0s/);
    // Cleared to the end of the line, then the newline that leaves the bar on screen.
    expect(out.endsWith("\u001b[K\n")).toBe(true);
  });
});
