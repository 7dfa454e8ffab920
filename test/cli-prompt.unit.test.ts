import { describe, expect, it } from "vitest";
import { promptText } from "../services/cli/prompt.ts";
import type { PromptReply } from "../services/prompt-builder/operations.ts";

const stats: PromptReply["stats"] = {
  outlineBytes: 120,
  tailTokens: 40,
  lines: 2,
  pending: 0,
  newerThanSnapshot: 1,
  snapshotSeq: 7,
};

describe("outline prompt's text", () => {
  it("shows a message's steps and state, as the JSON carries them", () => {
    const steps = [{ tool: "search", args: { q: "plan" } }, { tool: "read" }];
    const lines = promptText({
      messages: [
        { role: "user", content: "<chat>outline</chat>" },
        { role: "user", content: "Ana: look it up", steps },
        { role: "assistant", content: "found it", state: { k: 1 } },
      ],
      stats,
    });
    expect(lines).toEqual([
      "── user ──",
      "<chat>outline</chat>",
      "── user ──",
      "Ana: look it up",
      `[2 steps: ${JSON.stringify(steps)}]`,
      "── assistant ──",
      "found it",
      '[state: {"k":1}]',
      "── 3 messages; outline 2 lines, 120 bytes; tail ≈40 tokens; 1 newer than the snapshot ──",
    ]);
  });

  it("cuts long steps short, never inside a surrogate pair, and says where they are whole", () => {
    const steps = [{ out: "x".repeat(180) + "😀".repeat(20) }];
    const [line] = promptText({
      messages: [{ role: "user", content: "Bo: ran it", steps }],
      stats,
    }).filter((l) => l.startsWith("[1 step:"));
    const json = JSON.stringify(steps);
    expect(line).toMatch(
      new RegExp(`… \\(${json.length} characters; --json shows them whole\\)\\]$`),
    );
    const shown = (line as string).slice("[1 step: ".length, line!.indexOf("…"));
    expect(json.startsWith(shown)).toBe(true);
    expect(shown.length).toBeGreaterThanOrEqual(199);
    expect(/[\uD800-\uDBFF]$/.test(shown)).toBe(false);
  });
});
