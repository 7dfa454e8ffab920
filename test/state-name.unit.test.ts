import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isState, stateName } from "../machines/state-name.ts";

const key = fc.constantFrom("active", "idle", "backlog", "a", "ab", "b.c", "slot", "thread");
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    key,
    fc.dictionary(key, tie("value"), { minKeys: 0, maxKeys: 3 }),
  ),
})).value;

describe("isState", () => {
  it("says whether a state value has a name, as comparing stateName would", () => {
    fc.assert(
      fc.property(value, value, (v, other) => {
        expect(isState(v, stateName(v))).toBe(true);
        const name = stateName(other);
        expect(isState(v, name)).toBe(stateName(v) === name);
      }),
    );
  });

  it("reads the machine's nested states", () => {
    expect(isState({ active: "idle" }, "active.idle")).toBe(true);
    expect(isState({ active: "idle" }, "active.cutting")).toBe(false);
    expect(isState("backlog", "backlog")).toBe(true);
    expect(isState({ active: "idle" }, "activeXidle")).toBe(false);
    const value = { thread: { active: "idle" }, slot: { passivating: "room" } };
    expect(isState(value, "slot.passivating.room,thread.active.idle")).toBe(true);
    expect(isState(value, "slot.passivating,thread.active.idle")).toBe(false);
    expect(isState(value, "thread.active.idle")).toBe(false);
  });

  it("names parallel regions in key order, whatever order XState entered them in", () => {
    fc.assert(
      fc.property(fc.dictionary(key, value, { minKeys: 2, maxKeys: 4 }), (v) => {
        const reversed = Object.fromEntries(Object.entries(v).reverse());
        expect(stateName(reversed)).toBe(stateName(v));
        expect(isState(reversed, stateName(v))).toBe(true);
      }),
    );
  });
});
