import { describe, expect, it } from "vitest";
import { InvariantError } from "../shared/errors.ts";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { streamDifferences, subjectCovers } from "../services/nats/stream-check.ts";
import { subjects } from "../services/nats/subjects.ts";

describe("subjects", () => {
  const s = subjects(DEFAULT_NAMES);

  it("builds the contract's subjects and message ids", () => {
    expect(s.messageCreated("t_1")).toBe("chat.t_1.message.created");
    expect(s.threadDeleted("t_1")).toBe("chat.t_1.thread.deleted");
    expect(s.historyNode("t_1", 2, 5)).toBe("history.t_1.2.5");
    expect(s.historyMsgId("t_1", 2, 5)).toBe("t_1:2:5");
    expect(s.threadChat("t_1")).toBe("chat.t_1.>");
    expect(s.threadHistory("t_1")).toBe("history.t_1.>");
    expect(s.deadLetter).toBe("outline.dead");
  });

  it("refuses a thread id that would widen a subject", () => {
    for (const bad of ["a.b", "*", ">", "", "x".repeat(129), "a b"]) {
      expect(() => s.threadChat(bad)).toThrow(InvariantError);
    }
    expect(() => s.historyNode("t", -1, 0)).toThrow(InvariantError);
    expect(() => s.historyNode("t", 0, 1.5)).toThrow(InvariantError);
  });

  it("parses subjects back, with a multi-token prefix too", () => {
    const acme = subjects({ ...DEFAULT_NAMES, chatPrefix: "acme.chat" });
    expect(acme.parseChat("acme.chat.t9.message.created")).toEqual({
      thread: "t9",
      kind: "message.created",
    });
    expect(acme.parseChat("acme.chat.t9.thread.deleted")?.kind).toBe("thread.deleted");
    expect(acme.parseChat("acme.chat.t9.message.edited")).toBeUndefined();
    expect(acme.parseChat("chat.t9.message.created")).toBeUndefined();
    expect(s.parseHistory("history.t9.3.14")).toEqual({ thread: "t9", level: 3, index: 14 });
    expect(s.parseHistory("history.t9.3")).toBeUndefined();
    expect(s.parseHistory("history.t9.x.1")).toBeUndefined();
  });
});

describe("subjectCovers", () => {
  it.each([
    ["chat.>", "chat.*.message.created", true],
    ["chat.*.message.created", "chat.*.message.created", true],
    ["chat.*.*.*", "chat.*.thread.deleted", true],
    ["chat.*.message.*", "chat.*.thread.deleted", false],
    ["chat.a.message.created", "chat.*.message.created", false],
    ["chat.*", "chat.*.message.created", false],
    ["chat.>", "chat", false],
    ["history.>", "history.>", true],
    ["*.>", "history.>", true],
    ["history.*", "history.>", false],
  ])("%s covers %s: %s", (pattern, subject, expected) => {
    expect(subjectCovers(pattern, subject)).toBe(expected);
  });
});

describe("streamDifferences", () => {
  const needs = {
    name: "CHAT",
    variable: "OUTLINE_CHAT_STREAM",
    subjects: ["chat.*.message.created"],
    keepsEverything: true,
    purges: true,
    direct: true,
    rollup: false,
  };

  it("finds nothing wrong with a stream that keeps everything on file", () => {
    expect(
      streamDifferences(needs, {
        subjects: ["chat.>"],
        storage: "file",
        retention: "limits",
        max_age: 0,
        max_msgs: -1,
        max_bytes: -1,
        max_msgs_per_subject: -1,
        allow_direct: true,
      }),
    ).toEqual([]);
  });

  it("names each thing that would lose messages or block a purge", () => {
    const diffs = streamDifferences(
      { ...needs, deletesOneByOne: true },
      {
        subjects: ["chat.*.message.created"],
        storage: "file",
        retention: "workqueue",
        max_msgs: 1000,
        deny_purge: true,
        deny_delete: true,
        allow_direct: false,
      },
    );
    expect(diffs.join("\n")).toMatch(/retention is workqueue/);
    expect(diffs.join("\n")).toMatch(/max_msgs is 1000/);
    expect(diffs.join("\n")).toMatch(/deny_purge/);
    expect(diffs.join("\n")).toMatch(/deny_delete is set/);
    expect(diffs.join("\n")).toMatch(/allow_direct is off/);
    expect(diffs).toHaveLength(5);
  });

  it("minds deny_delete only where a thread is erased message by message (nats-server < 2.10)", () => {
    const config = {
      subjects: ["chat.*.message.created"],
      storage: "file" as const,
      retention: "limits" as const,
      max_age: 0,
      max_msgs: -1,
      max_bytes: -1,
      max_msgs_per_subject: -1,
      allow_direct: true,
      deny_delete: true,
    };
    expect(streamDifferences({ ...needs, deletesOneByOne: false }, config)).toEqual([]);
    expect(streamDifferences({ ...needs, deletesOneByOne: true }, config).join("\n")).toMatch(
      /deny_delete is set/,
    );
  });
});
