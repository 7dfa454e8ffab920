import { describe, expect, it } from "vitest";
import { UsageError } from "../services/cli/args.ts";
import { parseReplayArgs } from "../services/cli/replay/args.ts";

describe("outline replay's command line", () => {
  it("refuses a --thread that is no thread id, naming the rule, as 'outline dead' does", () => {
    for (const argv of [
      ["--thread", "bad.id"],
      ["--thread=bad.id"],
      ["--thread", "x".repeat(129)],
    ]) {
      expect(() => parseReplayArgs(argv)).toThrow(UsageError);
      expect(() => parseReplayArgs(argv)).toThrow(
        /^thread id '[^']+' is invalid: a thread id is 1–128 characters of A-Z, a-z, 0-9, '_' or '-'$/,
      );
    }
    expect(parseReplayArgs(["--thread", "support-42_b"]).thread).toBe("support-42_b");
  });
});
