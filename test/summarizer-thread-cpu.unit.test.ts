import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ThrottledCpu } from "../services/summarizer/thread-cpu.ts";

describe("a summarizer thread's CPU, read at most every so often", () => {
  it("reports all the CPU used, reading at most once per interval, whenever the calls come", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gap: fc.nat(250), used: fc.nat(40) }), { maxLength: 60 }),
        (calls) => {
          let total = 7;
          let reads = 0;
          const cpu = new ThrottledCpu(() => {
            reads += 1;
            return total;
          }, 100);
          let now = 0;
          let reported = 0;
          const readTimes: number[] = [];
          for (const { gap, used } of calls) {
            now += gap;
            total += used;
            const before = reads;
            reported += cpu.since(now);
            if (reads > before) readTimes.push(now);
            // Not read: the call owes one, and says so.
            expect(cpu.late).toBe(reads === before);
          }
          for (let i = 1; i < readTimes.length; i++) {
            expect((readTimes[i] as number) - (readTimes[i - 1] as number)).toBeGreaterThanOrEqual(
              100,
            );
          }
          // Once idle, the owed read is made: nothing used goes unreported.
          if (cpu.late) reported += cpu.since(now, true);
          expect(reported).toBe(total - 7);
          expect(cpu.late).toBe(false);
        },
      ),
    );
  });

  it("reads at the first call, and reports nothing where the CPU cannot be read", () => {
    const totals = [10, 25];
    const cpu = new ThrottledCpu(() => totals.shift(), 100);
    expect(cpu.unreadable).toBe(false);
    expect(cpu.since(0)).toBe(15);
    const none = new ThrottledCpu(() => undefined, 100);
    expect(none.unreadable).toBe(true);
    expect(none.since(500)).toBe(0);
  });
});
