import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Heap } from "../shared/heap.ts";

const byValueThenIndex = (values: readonly number[]) => (a: number, b: number) =>
  (values[a] as number) > (values[b] as number) || (values[a] === values[b] && a < b);

describe("Heap", () => {
  it("gives its items back in `before` order, whatever order they went in", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 }), { maxLength: 60 }), (values) => {
        const heap = new Heap<number>(byValueThenIndex(values));
        for (let i = values.length - 1; i >= 0; i--) heap.push(i);
        const out: number[] = [];
        for (let i = heap.pop(); i !== undefined; i = heap.pop()) out.push(i);
        const expected = values
          .map((_, i) => i)
          .sort((a, b) => {
            const d = (values[b] as number) - (values[a] as number);
            return d !== 0 ? d : a - b;
          });
        expect(out).toEqual(expected);
      }),
    );
  });

  it("keeps its order when the first's key is lowered and it sinks", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 20 }),
        (start, lowered) => {
          const values = start.slice();
          const heap = new Heap<number>(byValueThenIndex(values));
          values.forEach((_, i) => heap.push(i));
          for (const by of lowered) {
            const first = heap.top() as number;
            values[first] = (values[first] as number) - by;
            heap.sinkTop();
          }
          const out: number[] = [];
          for (let i = heap.pop(); i !== undefined; i = heap.pop()) out.push(i);
          for (let k = 1; k < out.length; k++) {
            const a = out[k - 1] as number;
            const b = out[k] as number;
            expect(byValueThenIndex(values)(b, a)).toBe(false);
          }
          expect(out.length).toBe(start.length);
        },
      ),
    );
  });
});
