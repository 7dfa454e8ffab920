import { describe, expect, it } from "vitest";
import { coverage } from "../services/prompt-builder/ui/format.ts";

describe("the explorer's outline header", () => {
  it("says a thread never cut has no message covered, not 'messages 0–0'", () => {
    expect(coverage(0, 0)).toBe("0 lines, covering no message yet");
    expect(coverage(1, 2)).toBe("1 line covering messages 0–1");
    expect(coverage(12, 2048)).toBe("12 lines covering messages 0–2,047");
  });
});
