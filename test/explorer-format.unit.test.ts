import { describe, expect, it } from "vitest";
import { coverage, nextCutText } from "../services/explorer/ui/format.ts";

describe("the explorer's outline header", () => {
  it("says a thread never cut has no message covered, not 'messages 0–0'", () => {
    expect(coverage(0, 0)).toBe("0 lines, covering no message yet");
    expect(coverage(1, 2)).toBe("1 line covering messages 0–1");
    expect(coverage(12, 2048)).toBe("12 lines covering messages 0–2,047");
  });
});

describe("the explorer's next cut", () => {
  const tail = [2000, 4000] as const;

  it("says the messages due now are a floor: at least they leave, at that position or later", () => {
    expect(nextCutText({ leaving: 60, leavingTokens: 1234, tokens: 3000 }, 2722, tail)).toEqual({
      lead: "✂ next cut at 2,782 or later",
      detail: ": at least 60 leave (1,234 tok), when the tail passes 4,000 tok, 1,000 to go",
    });
  });

  it("once the tail has passed tail[1], says the cut waits for the summaries", () => {
    expect(nextCutText({ leaving: 3, leavingTokens: 2500, tokens: 4100 }, 0, tail).detail).toBe(
      ": at least 3 leave (2,500 tok), the tail passed 4,000 tok: the cut waits for their summaries",
    );
  });

  it("nothing leaving: under tail[0], or a single message bigger than it, which always stays", () => {
    expect(nextCutText({ leaving: 0, leavingTokens: 0, tokens: 900 }, 5, tail)).toEqual({
      lead: "",
      detail: "nothing leaves yet: under 2,000 tok",
    });
    expect(nextCutText({ leaving: 0, leavingTokens: 0, tokens: 5000 }, 5, tail).detail).toBe(
      "nothing leaves yet: the newest message always stays",
    );
  });
});
