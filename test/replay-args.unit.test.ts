import { describe, expect, it } from "vitest";
import { UsageError } from "../services/cli/args.ts";
import { parseReplayArgs, REPLAY_USAGE } from "../services/cli/replay/args.ts";

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

describe("outline replay --help", () => {
  it("says each thread is rebuilt under the settings its log records, not this replay's", () => {
    expect(REPLAY_USAGE).not.toContain("same settings as the worker");
    expect(REPLAY_USAGE).toContain("history.<thread>.settings.<seq>");
    expect(REPLAY_USAGE).toMatch(
      /HISTORY_OUTLINE \(environment or config file\) apply only to a\s+thread, or its first messages, that recorded none/,
    );
  });
});
