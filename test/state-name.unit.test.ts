import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isState, stateName } from "../machines/state-name.ts";

const key = fc.constantFrom("active", "idle", "backlog", "a", "ab", "b.c");
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    key,
    fc.dictionary(key, tie("value"), { minKeys: 0, maxKeys: 2 }),
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
  });
});
