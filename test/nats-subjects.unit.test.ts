import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { THREAD_ID } from "../shared/events.ts";
import { InvariantError } from "../shared/errors.ts";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { streamDifferences, subjectCovers } from "../services/nats/stream-check.ts";
import { deadLetterSubject, subjects } from "../services/nats/subjects.ts";

describe("subjects", () => {
  const s = subjects(DEFAULT_NAMES);

  it("builds the contract's subjects and message ids", () => {
    expect(s.messageCreated("t_1")).toBe("chat.t_1.message.created");
    expect(s.threadDeleted("t_1")).toBe("chat.t_1.thread.deleted");
    expect(s.historyNode("t_1", 2, 5)).toBe("history.t_1.2.5");
    expect(s.historyMsgId("t_1", 2, 5)).toBe("t_1:2:5");
    expect(s.threadChat("t_1")).toBe("chat.t_1.>");
    expect(s.threadHistory("t_1")).toBe("history.t_1.>");
    expect(s.deadLetterShared).toBe("outline.dead");
    expect(s.deadLetterOf("t_1")).toBe("outline.dead.t_1");
    expect(s.deadLetterNoThread).toBe("outline.dead.unknown.thread");
    expect(s.deadStreamSubjects).toEqual(["outline.dead", "outline.dead.>"]);
  });

  it("refuses a thread id that would widen a subject", () => {
    for (const bad of ["a.b", "*", ">", "", "x".repeat(129), "a b"]) {
      expect(() => s.threadChat(bad)).toThrow(InvariantError);
    }
    for (const bad of ["a.b", "*", ">", "", "x".repeat(129)]) {
      expect(() => s.deadLetterOf(bad)).toThrow(InvariantError);
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
    for (const bad of [
      "acme.chat..message.created",
      "acme.chat.t9.message.created.x",
      "acme.chat.t9.x.message.created",
      "acme.chat.t9.message",
      "acme.chat.t9",
      "acme.chat.",
      "acme.chat",
      "acme.chatt9.message.created",
      `acme.chat.${"x".repeat(129)}.message.created`,
      "acme.chat.t*.message.created",
    ]) {
      expect(acme.parseChat(bad), bad).toBeUndefined();
    }
    expect(acme.parseChat(`acme.chat.${"x".repeat(128)}.thread.deleted`)?.thread).toHaveLength(128);
    expect(s.parseHistory("history.t9.3.14")).toEqual({ thread: "t9", level: 3, index: 14 });
    expect(s.parseHistory("history.t9.3")).toBeUndefined();
    expect(s.parseHistory("history.t9.x.1")).toBeUndefined();
  });
});

describe("dead-letter subjects", () => {
  const s = subjects(DEFAULT_NAMES);

  it("puts a letter on the thread its subject names, whatever else is wrong with the subject", () => {
    expect(deadLetterSubject(DEFAULT_NAMES, "chat.t_1.message.created")).toBe("outline.dead.t_1");
    expect(deadLetterSubject(DEFAULT_NAMES, "chat.t_1.thread.deleted")).toBe("outline.dead.t_1");
    // An unknown event type, a partition token (right or wrong), trailing tokens: still t_1's.
    expect(deadLetterSubject(DEFAULT_NAMES, "chat.t_1.message.edited")).toBe("outline.dead.t_1");
    expect(deadLetterSubject(DEFAULT_NAMES, "chat.t_1.message.created.7")).toBe("outline.dead.t_1");
    expect(deadLetterSubject(DEFAULT_NAMES, "chat.t_1")).toBe("outline.dead.t_1");
    expect(s.chatThread("chat.t_1.x.y.z")).toBe("t_1");
  });

  it("puts a letter whose subject names no thread on the one subject for those", () => {
    for (const subject of [
      "chat.café.message.created",
      "chat.*.message.created",
      "chat.>",
      `chat.${"x".repeat(129)}.message.created`,
      "chat..message.created",
      "chat.",
      "chat",
      "chatty.t1.message.created",
      "history.t1.0.0",
      "x",
      "",
    ]) {
      expect(deadLetterSubject(DEFAULT_NAMES, subject), subject).toBe(
        "outline.dead.unknown.thread",
      );
      expect(s.chatThread(subject), subject).toBeUndefined();
    }
  });

  it("follows configured names, with multi-token prefixes", () => {
    const acmeNames = { ...DEFAULT_NAMES, chatPrefix: "acme.chat", deadSubject: "acme.dead" };
    const acme = subjects(acmeNames);
    expect(deadLetterSubject(acmeNames, "acme.chat.t9.message.created")).toBe("acme.dead.t9");
    expect(deadLetterSubject(acmeNames, "chat.t9.message.created")).toBe(
      "acme.dead.unknown.thread",
    );
    expect(deadLetterSubject(acmeNames, "acme.chatt9.message.created")).toBe(
      "acme.dead.unknown.thread",
    );
    expect(acme.parseDeadLetter("acme.dead.t9")).toBe("t9");
    expect(acme.parseDeadLetter("outline.dead.t9")).toBeUndefined();
    expect(acme.deadStreamSubjects).toEqual(["acme.dead", "acme.dead.>"]);
  });

  it("keeps every thread's subject apart from the others, the no-thread one and the shared one", () => {
    const id = fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/);
    fc.assert(
      fc.property(id, id, (a, b) => {
        const subject = s.deadLetterOf(a);
        expect(deadLetterSubject(DEFAULT_NAMES, s.messageCreated(a))).toBe(subject);
        expect(s.parseDeadLetter(subject)).toBe(a);
        // A purge of one thread's subject (a literal filter) reaches nothing else.
        for (const other of [
          s.deadLetterNoThread,
          s.deadLetterShared,
          ...(a === b ? [] : [s.deadLetterOf(b)]),
        ]) {
          expect(other).not.toBe(subject);
          expect(subjectCovers(subject, other)).toBe(false);
        }
        // The stream captures it, as it does the others.
        for (const one of [subject, s.deadLetterNoThread, s.deadLetterShared]) {
          expect(s.deadStreamSubjects.filter((p) => subjectCovers(p, one))).toHaveLength(1);
        }
      }),
      { numRuns: 500 },
    );
    // "_" and "-" alone are thread ids: neither is the no-thread subject.
    expect(s.deadLetterOf("_")).not.toBe(s.deadLetterNoThread);
    expect(s.parseDeadLetter(s.deadLetterNoThread)).toBeUndefined();
    expect(s.parseDeadLetter(s.deadLetterShared)).toBeUndefined();
    expect(s.parseDeadLetter("outline.dead.a.b")).toBeUndefined();
  });
});

/** The oracles' reading: the tokens after `prefix.`, split on dots, when there are three. */
function threeTokensAfter(prefix: string, subject: string): [string, string, string] | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const rest = subject.slice(prefix.length + 1).split(".");
  return rest.length === 3 ? (rest as [string, string, string]) : undefined;
}

describe("parseChat", () => {
  // The reading it replaced (split on dots): the same answer for any subject, and a fourth
  // token of decimal digits read as the partition (`chat.<thread>.<kind>.<k>`, docs/scale-out.md).
  function bySplit(prefix: string, subject: string) {
    if (!subject.startsWith(`${prefix}.`)) return undefined;
    const tokens = subject.slice(prefix.length + 1).split(".");
    const last = tokens.at(-1) ?? "";
    const partition = tokens.length === 4 && /^\d+$/.test(last) ? Number(last) : undefined;
    const rest = partition === undefined ? tokens : tokens.slice(0, 3);
    if (rest.length !== 3) return undefined;
    const [thread = "", a = "", b = ""] = rest;
    const kind = `${a}.${b}`;
    if (!THREAD_ID.test(thread)) return undefined;
    if (kind !== "message.created" && kind !== "thread.deleted") return undefined;
    return partition === undefined ? { thread, kind } : { thread, kind, partition };
  }

  it("answers as a split on dots would, for any subject", () => {
    const token = fc.oneof(
      fc.constantFrom(
        "chat",
        "acme",
        "message",
        "created",
        "thread",
        "deleted",
        "t9",
        "",
        "*",
        ">",
        "0",
        "17",
        "007",
      ),
      fc.string({ maxLength: 6 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,130}$/),
    );
    // Half the runs are shaped like an event's subject, with or without a token after the kind.
    const eventLike = fc
      .tuple(
        token,
        fc.constantFrom("message.created", "thread.deleted", "message.deleted"),
        fc.option(token),
      )
      .map(([thread, kind, after]) => [thread, kind, ...(after === null ? [] : [after])]);
    fc.assert(
      fc.property(
        fc.constantFrom("chat", "acme.chat"),
        fc.oneof(fc.array(token, { maxLength: 6 }), eventLike),
        (prefix, tokens) => {
          for (const subject of [tokens.join("."), [prefix, ...tokens].join(".")]) {
            expect(subjects({ ...DEFAULT_NAMES, chatPrefix: prefix }).parseChat(subject)).toEqual(
              bySplit(prefix, subject),
            );
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe("parseHistory", () => {
  // The reading it replaced: a split on dots, and regular expressions.
  function bySplit(prefix: string, subject: string) {
    const rest = threeTokensAfter(prefix, subject);
    if (!rest) return undefined;
    const [thread, level, index] = rest;
    if (!THREAD_ID.test(thread) || !/^\d+$/.test(level) || !/^\d+$/.test(index)) return undefined;
    return { thread, level: Number(level), index: Number(index) };
  }

  it("answers as a split on dots would, for any run of subjects (it reuses the thread read last)", () => {
    const token = fc.oneof(
      fc.constantFrom("history", "t9", "0", "007", "", "*", "x.1"),
      fc.stringMatching(/^\d{1,15}$/),
      fc.string({ maxLength: 5 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,130}$/),
    );
    // Mostly node subjects of a few threads that start alike (t9, t9x, t, t!), so a run may
    // switch to a thread the last one is a prefix of, or to one that is not a thread at all.
    const nodeSubject = fc.tuple(
      fc.constantFrom("t9", "t9x", "t", "t!", "t9.x"),
      fc.stringMatching(/^\d{1,4}$/),
      fc.stringMatching(/^\d{1,4}$/),
    );
    fc.assert(
      fc.property(
        fc.constantFrom("history", "acme.history"),
        fc.array(fc.oneof(nodeSubject, fc.array(token, { maxLength: 5 })), { maxLength: 12 }),
        (prefix, runs) => {
          const s = subjects({ ...DEFAULT_NAMES, historyPrefix: prefix });
          for (const tokens of runs) {
            for (const subject of [tokens.join("."), [prefix, ...tokens].join(".")]) {
              expect(s.parseHistory(subject), subject).toEqual(bySplit(prefix, subject));
            }
          }
        },
      ),
      { numRuns: 2_000 },
    );
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

describe("partitioned subjects (docs/scale-out.md)", () => {
  const s = subjects({ ...DEFAULT_NAMES, chatPrefix: "acme.chat", partitions: 4 });
  const single = subjects(DEFAULT_NAMES);

  it("lists both stored forms of a thread's events, the published one first", () => {
    expect(s.stored("t1", "message.created")).toEqual([
      "acme.chat.t1.message.created",
      "acme.chat.t1.message.created.2",
    ]);
    expect(s.stored("t1", "thread.deleted")).toEqual([
      "acme.chat.t1.thread.deleted",
      "acme.chat.t1.thread.deleted.2",
    ]);
    expect(single.stored("t1", "message.created")).toEqual(["chat.t1.message.created"]);
    expect(s.partitionOf("t1")).toBe(2);
    expect(single.partitionOf("t1")).toBeUndefined();
  });

  it("filters a partition's events and the unpartitioned ones apart", () => {
    expect(s.partitionFilter(3)).toBe("acme.chat.*.*.*.3");
    expect(s.unpartitionedFilter).toBe("acme.chat.*.*.*");
    expect(s.chatStreamSubjects).toEqual([
      "acme.chat.*.message.created",
      "acme.chat.*.thread.deleted",
      "acme.chat.*.*.*.*",
    ]);
    expect(single.chatStreamSubjects).toHaveLength(2);
    for (const subject of s.stored("t9", "message.created")) {
      expect(s.chatStreamSubjects.some((p) => subjectCovers(p, subject))).toBe(true);
    }
  });

  it("parses both forms, in single mode too (a stream that was partitioned)", () => {
    for (const p of [s, subjects({ ...DEFAULT_NAMES, chatPrefix: "acme.chat" })]) {
      expect(p.parseChat("acme.chat.t1.message.created.2")).toEqual({
        thread: "t1",
        kind: "message.created",
        partition: 2,
      });
      expect(p.parseChat("acme.chat.t1.thread.deleted.17")?.partition).toBe(17);
      expect(p.parseChat("acme.chat.t1.message.created")).toEqual({
        thread: "t1",
        kind: "message.created",
      });
      for (const bad of [
        "acme.chat.t1.message.created.x",
        "acme.chat.t1.message.created.",
        "acme.chat.t1.message.edited.2",
        "acme.chat.t1.x.message.created",
        "acme.chat.t1.message.created.2.3",
      ]) {
        expect(p.parseChat(bad), bad).toBeUndefined();
      }
    }
  });

  it("round-trips every stored form through parseChat", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(THREAD_ID),
        fc.integer({ min: 1, max: 4096 }),
        fc.constantFrom("message.created" as const, "thread.deleted" as const),
        (thread, partitions, kind) => {
          const p = subjects({ ...DEFAULT_NAMES, partitions });
          const [plain, mapped] = p.stored(thread, kind);
          expect(p.parseChat(plain as string)).toEqual({ thread, kind });
          expect(p.parseChat(mapped as string)).toEqual({
            thread,
            kind,
            partition: p.partitionOf(thread),
          });
        },
      ),
    );
  });
});
