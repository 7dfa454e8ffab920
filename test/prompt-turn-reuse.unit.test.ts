// What a real turn reuses when the worker writes a snapshot per message (issue 49): the lines of
// the snapshot before, parsed once; and the id index read sent early, used only where it answers.
import { headers } from "@nats-io/transport-node";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { OutlineSnapshot, SnapshotLine } from "../shared/snapshot.ts";
import { createOperations, type PromptReply } from "../services/prompt-builder/operations.ts";
import { PromptCache } from "../services/prompt-builder/prompt-cache.ts";
import type {
  HeldSnapshot,
  ReadAhead,
  StoredMessage,
  ThreadReader,
} from "../services/nats/reader.ts";

const encoder = new TextEncoder();
const stored = (value: unknown, revision: number) => {
  const text = JSON.stringify(value);
  return {
    bytes: encoder.encode(text),
    revision,
    parse: () => JSON.parse(text) as OutlineSnapshot,
  };
};

// Texts that look like the JSON around `lines`, quotes and backslashes included.
const text = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 30 }),
  fc.constantFrom('],"tail":[', ',"lines":[', '\\"', "\\", '"]', "« »"),
);
const line = fc.record({
  id: fc.nat(1000),
  n: fc.constantFrom(1, 2, 4),
  level: fc.nat(3),
  text,
  bytes: fc.nat(600),
  until: fc.constant("2026-01-01T00:00:00.000Z"),
});

/** A snapshot in the worker's layout (shared/snapshot.ts: head, lines, then tail). */
const snapshot = (lines: SnapshotLine[], seq: number, tail: string[]) => ({
  thread: "t",
  count: lines.length + tail.length,
  boundary: lines.length,
  since: null,
  cutAt: null,
  complete: true,
  bytes: 0,
  seq,
  lines,
  tail,
  tailSeqs: tail.map((_, i) => seq - i),
  pending: { jobs: 0, cuts: 0, merging: false, held: 0 },
});

describe("a snapshot parsed around the lines kept", () => {
  it("is the whole parse, and shares the lines array while their bytes are the same", () => {
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 8 }),
        fc.array(line, { maxLength: 8 }),
        fc.boolean(),
        fc.array(text, { maxLength: 4 }),
        (first, other, same, tail) => {
          const cache = new PromptCache(1_000_000);
          const a = cache.snapshot("t", stored(snapshot(first, 1, ["x"]), 1));
          const nextLines = same ? first : other;
          const value = snapshot(nextLines, 2, tail);
          const b = cache.snapshot("t", stored(value, 2));
          expect(b.snapshot).toEqual(JSON.parse(JSON.stringify(value)));
          if (same) expect(b.snapshot.lines).toBe(a.snapshot.lines);
        },
      ),
    );
  });

  it("keeps a thread's snapshot while other threads' bodies come and go", () => {
    const cache = new PromptCache(2_000);
    const kept = cache.snapshot("t", stored(snapshot([], 1, ["x"]), 1));
    for (let i = 0; i < 20; i++) {
      const args = { thread: `u${i}`, agent: "a", from: undefined, format: "openai" as const };
      cache.keep(args, undefined, 1, [Buffer.alloc(500)]);
    }
    expect(cache.held("t")).toBe(kept);
    expect(cache.bytes).toBeLessThanOrEqual(4_000);
  });

  it("parses the whole of another layout, or of bytes that are not JSON (its own error)", () => {
    const cache = new PromptCache(1_000_000);
    const lines = [{ id: 0, n: 1, level: 0, text: "a", bytes: 1, until: "" }];
    cache.snapshot("t", stored(snapshot(lines, 1, []), 1));
    const moved = { tail: ["m"], lines, seq: 2 };
    expect(cache.snapshot("t", stored(moved, 2)).snapshot).toEqual(moved);
    const bad = { bytes: encoder.encode('{"seq":3,"lines":[],"tail":[}'), revision: 3 };
    const parse = () => {
      throw new Error("BAD_SNAPSHOT");
    };
    expect(() => cache.snapshot("t", { ...bad, parse })).toThrow("BAD_SNAPSHOT");
  });
});

/**
 * A thread with an outline (so newer messages are checked against the id index) whose index
 * answers from a script: each read of message id `dup` takes the next answer.
 */
class IndexedThread implements ThreadReader {
  readonly messages: StoredMessage[] = [];
  value: OutlineSnapshot;
  revision = 1;
  /** Answers of the id index for `dup`, one per read; other ids: their own sequence. */
  dupAnswers: (number | undefined)[] = [];
  indexReads = 0;
  /** Messages read one by one (a snapshot's tail read message by message). */
  messageReads = 0;

  constructor() {
    for (let i = 0; i < 3; i++) this.add(`m${i}`);
    this.value = this.snapshotOf(3);
  }

  /** The snapshots' cutAt from the next write on. */
  cutAt = "2026-03-01T10:00:00.000Z";

  add(id: string, extra: Partial<Message> = {}): StoredMessage {
    const message: Message = {
      id,
      thread: "t",
      at: "2026-03-01T10:00:00.000Z",
      from: "Ana",
      role: "user",
      text: `text of ${id}`,
      ...extra,
    };
    const m = { message, seq: 10 + this.messages.length };
    this.messages.push(m);
    return m;
  }

  /** One line for message 0, the rest whole. */
  snapshotOf(count: number): OutlineSnapshot {
    const tail = this.messages.slice(1, count);
    return {
      thread: "t",
      count,
      boundary: 1,
      since: null,
      cutAt: this.cutAt,
      complete: true,
      bytes: 10,
      seq: this.messages[count - 1]?.seq ?? 0,
      lines: [{ id: 0, n: 1, level: 0, text: "line", bytes: 4, until: "" }],
      tail: tail.map((m) => m.message.id),
      tailSeqs: tail.map((m) => m.seq),
      pending: { jobs: 0, cuts: 0, merging: false, held: 0 },
    };
  }

  write(count: number): void {
    this.revision += 1;
    this.value = this.snapshotOf(count);
    this.value.pending = { jobs: this.revision, cuts: 0, merging: false, held: 0 };
  }

  snapshot() {
    return Promise.resolve(structuredClone(this.value));
  }
  storedSnapshot() {
    return Promise.resolve(stored(this.value, this.revision));
  }
  storedSnapshotSince(_thread: string, held: HeldSnapshot) {
    return held.revision === this.revision
      ? Promise.resolve("unchanged" as const)
      : this.storedSnapshot();
  }
  lastMessageSeq() {
    return Promise.resolve(this.messages.at(-1)?.seq ?? 0);
  }
  messageAt(_thread: string, seq: number) {
    this.messageReads += 1;
    return Promise.resolve(this.messages.find((m) => m.seq === seq));
  }
  messagesAfter(_thread: string, afterSeq: number, untilSeq: number) {
    return Promise.resolve(this.messages.filter((m) => m.seq > afterSeq && m.seq <= untilSeq));
  }
  readAhead(thread: string, afterSeq: number): ReadAhead {
    const m = this.messages.find((x) => x.seq > afterSeq);
    const h = headers();
    if (m) h.set("Nats-Msg-Id", m.message.id);
    const got = Promise.resolve(
      m && { seq: m.seq, subject: `chat.t.message.created`, data: new Uint8Array(), headers: h },
    );
    return { thread, afterSeq, got };
  }
  idFirstSeq(_thread: string, id: string) {
    this.indexReads += 1;
    if (id !== "dup") return Promise.resolve(this.messages.find((m) => m.message.id === id)?.seq);
    return Promise.resolve(this.dupAnswers.shift());
  }
  node() {
    return Promise.resolve(undefined);
  }
}

const ids = (body: Buffer) =>
  (JSON.parse(body.toString("utf8")) as PromptReply).messages
    .slice(1)
    .map((m) => (typeof m.content === "string" ? m.content : ""));

describe("the id index read sent as soon as a turn's read ahead finds a message", () => {
  it("answers alone for a snapshot held from an earlier turn: one read", async () => {
    const thread = new IndexedThread();
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    await ops.promptBody(request);
    thread.add("dup");
    thread.dupAnswers = [undefined];
    thread.indexReads = 0;
    expect(ids(await ops.promptBody(request))).toEqual([
      "Ana: text of m1",
      "Ana: text of m2",
      "Ana: text of dup",
    ]);
    expect(thread.indexReads).toBe(1);
  });

  it("naming an earlier message, refuses the new one whatever the snapshot", async () => {
    const thread = new IndexedThread();
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    await ops.promptBody(request);
    thread.add("dup");
    thread.dupAnswers = [5, 5];
    expect(ids(await ops.promptBody(request))).toEqual(["Ana: text of m1", "Ana: text of m2"]);
  });

  it("finding no entry, is read again for a snapshot read in this turn, and that read decides", async () => {
    const thread = new IndexedThread();
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    await ops.promptBody(request);
    thread.add("dup");
    thread.write(3); // a new snapshot (its pending changed), read by the next turn
    // The early read may have been answered before that snapshot was written: it saw no
    // entry; the entry (an earlier message's) is there when read again.
    thread.dupAnswers = [undefined, 5];
    thread.indexReads = 0;
    expect(ids(await ops.promptBody(request))).toEqual(["Ana: text of m1", "Ana: text of m2"]);
    expect(thread.indexReads).toBe(2);
  });
});

describe("a turn after a turn", () => {
  it("is the body a build from scratch gives, its tail taken from what was held", async () => {
    await fc.assert(
      fc.asyncProperty(
        // Per turn: messages published, and how many more the worker's snapshot covers (it may
        // cover this turn's messages too, or lag).
        // and when its cut time moves (the agent's own state is shown only if newer than that).
        fc.array(
          fc.record({
            added: fc.integer({ min: 1, max: 3 }),
            covered: fc.nat(4),
            cutAt: fc.option(fc.integer({ min: 0, max: 30 })),
          }),
          { minLength: 1, maxLength: 10 },
        ),
        async (turns) => {
          const thread = new IndexedThread();
          const ops = createOperations(thread);
          const fresh = createOperations(thread, { promptCacheBytes: 0 });
          const request = { thread: "t", agent: "north" };
          await ops.promptBody(request);
          let count = 3;
          for (const [i, turn] of turns.entries()) {
            for (let k = 0; k < turn.added; k++) {
              const own = thread.messages.length % 2 === 0;
              const minute = String(thread.messages.length % 60).padStart(2, "0");
              thread.add(`n${i}.${k}`, {
                at: `2026-03-01T10:${minute}:00.000Z`,
                ...(own ? { from: "north", role: "assistant", state: { turn: i } } : {}),
              });
            }
            if (turn.cutAt !== null) {
              thread.cutAt = `2026-03-01T10:${String(turn.cutAt).padStart(2, "0")}:30.000Z`;
              thread.write(count);
            }
            if (turn.covered > 0) {
              count = Math.min(thread.messages.length, count + turn.covered);
              thread.write(count);
            }
            thread.messageReads = 0;
            const body = await ops.promptBody(request);
            expect(thread.messageReads).toBe(0);
            expect(body.toString("utf8")).toBe((await fresh.promptBody(request)).toString("utf8"));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
