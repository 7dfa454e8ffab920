import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { OpenAIMessage } from "../shared/prompt.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { ApiError } from "../services/api/api-error.ts";
import { createOperations, type PromptReply } from "../services/prompt-builder/operations.ts";
import { BLOCKS_PER_RUN } from "../services/prompt-builder/prompt-turns.ts";
import type { StoredMessage, ThreadReader } from "../services/nats/reader.ts";

const encoder = new TextEncoder();

/** A thread's stored messages and snapshot in memory, read the way the prompt-builder reads NATS. */
class FakeThread implements ThreadReader {
  readonly messages: StoredMessage[] = [];
  snapshotValue: OutlineSnapshot | undefined;
  #seq = 0;

  add(i: number, from = "Ana", extra: Partial<Message> = {}): StoredMessage {
    const message: Message = {
      id: `m${i}`,
      thread: "t",
      // Two messages a minute: one can share its time with the newest message cut (cutAt).
      at: new Date(Date.UTC(2026, 2, 1, 10, Math.floor(i / 2))).toISOString(),
      from,
      role: "user",
      text: `message ${i}`,
      ...extra,
    };
    const stored = { message, seq: (this.#seq += 2) };
    this.messages.push(stored);
    return stored;
  }

  /** A snapshot of the first `count` messages: `boundary` of them summarized, the rest whole. */
  snapshotOf(count: number, boundary: number): void {
    const tail = this.messages.slice(boundary, count);
    this.snapshotValue = {
      thread: "t",
      count,
      boundary,
      since: this.messages[0]?.message.at ?? null,
      cutAt: boundary > 0 ? (this.messages[boundary - 1]?.message.at ?? null) : null,
      complete: true,
      bytes: 0,
      seq: this.messages[count - 1]?.seq ?? 0,
      lines:
        boundary > 0
          ? [{ id: 0, n: boundary, level: 0, text: "summary", bytes: 8, until: "" }]
          : [],
      tail: tail.map((m) => m.message.id),
      tailSeqs: tail.map((m) => m.seq),
      pending: { jobs: 0, cuts: 0, merging: false },
    };
  }

  snapshot() {
    return Promise.resolve(this.snapshotValue);
  }
  storedSnapshot() {
    const value = this.snapshotValue;
    if (!value) return Promise.resolve(undefined);
    const bytes = encoder.encode(JSON.stringify(value));
    return Promise.resolve({ bytes, revision: value.seq, parse: () => structuredClone(value) });
  }
  lastMessageSeq() {
    return Promise.resolve(this.messages.at(-1)?.seq ?? 0);
  }
  messageAt(_thread: string, seq: number) {
    return Promise.resolve(this.messages.find((m) => m.seq === seq));
  }
  messagesAfter(_thread: string, afterSeq: number, untilSeq: number) {
    return Promise.resolve(this.messages.filter((m) => m.seq > afterSeq && m.seq <= untilSeq));
  }
  node() {
    return Promise.resolve(undefined);
  }
}

const texts = (reply: PromptReply) =>
  (reply.messages as OpenAIMessage[]).map((m) => (typeof m.content === "string" ? m.content : ""));

const parsed = (body: Buffer) => JSON.parse(body.toString("utf8")) as PromptReply;

describe("the served prompt: the snapshot's tail whole, then what was stored after it", () => {
  it("puts messages stored after the snapshot after its tail, oldest first, and counts them", async () => {
    const thread = new FakeThread();
    for (let i = 0; i < 6; i++) thread.add(i);
    thread.snapshotOf(4, 2);
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    for (const reply of [await ops.prompt(request), parsed(await ops.promptBody(request))]) {
      const shown = texts(reply);
      expect(shown[0]).toContain("summary");
      expect(shown.slice(1)).toEqual([2, 3, 4, 5].map((i) => `Ana: message ${i}`));
      expect(reply.stats.newerThanSnapshot).toBe(2);
      expect(reply.stats.snapshotSeq).toBe(8);
    }
  });

  it("a tail message the snapshot names but NATS lacks: 503 STATE_MISSING, asked again in 1 s", async () => {
    const thread = new FakeThread();
    for (let i = 0; i < 4; i++) thread.add(i);
    thread.snapshotOf(4, 2);
    thread.messages.splice(2, 1); // the worker still publishing it, or the thread just erased
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    for (const served of [ops.prompt(request), ops.promptBody(request)]) {
      const err = (await served.then(
        () => undefined,
        (e: unknown) => e,
      )) as ApiError;
      expect(err).toBeInstanceOf(ApiError);
      expect({ status: err.status, code: err.code, retryAfter: err.retryAfter }).toEqual({
        status: 503,
        code: "STATE_MISSING",
        retryAfter: 1,
      });
    }
  });

  it("a turn after a new message: the new one comes last, after everything served before", async () => {
    const thread = new FakeThread();
    for (let i = 0; i < 5; i++) thread.add(i);
    thread.snapshotOf(5, 3);
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    const before = texts(parsed(await ops.promptBody(request)));
    thread.add(5, "north");
    thread.add(6);
    const after = texts(parsed(await ops.promptBody(request)));
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length)).toEqual(["message 5", "Ana: message 6"]);
    // And the same once the snapshot moves on past one of them.
    thread.snapshotOf(6, 3);
    expect(texts(parsed(await ops.promptBody(request)))).toEqual(after);
  });

  it("a long run of turns without a new snapshot: each body is the reply built from scratch", async () => {
    // Each turn appends one message's block to the run kept; past BLOCKS_PER_RUN they are joined.
    const thread = new FakeThread();
    for (let i = 0; i < 4; i++) thread.add(i);
    thread.snapshotOf(4, 1);
    const ops = createOperations(thread);
    for (let turn = 0; turn < 3 * BLOCKS_PER_RUN; turn++) {
      thread.add(4 + turn, turn % 3 === 0 ? "north" : "Ana");
      for (const agent of ["north", "south"]) {
        const request = { thread: "t", agent };
        const served = (await ops.promptBody(request)).toString("utf8");
        expect(served).toBe(JSON.stringify(await ops.prompt(request)));
      }
    }
  });

  it("a thread without a snapshot is all tail, in stored order", async () => {
    const thread = new FakeThread();
    for (let i = 0; i < 3; i++) thread.add(i);
    const reply = parsed(await createOperations(thread).promptBody({ thread: "t", agent: "x" }));
    expect(texts(reply)).toEqual([0, 1, 2].map((i) => `Ana: message ${i}`));
    expect(reply.stats.newerThanSnapshot).toBe(3);
  });

  it("a cut at the instant of a message still whole takes its model state out of the next turn's prompt", async () => {
    const thread = new FakeThread();
    thread.add(0);
    thread.add(1, "north", { state: { thought: 1 } }); // the same minute as message 0
    thread.add(2);
    thread.snapshotOf(3, 0);
    const ops = createOperations(thread);
    const request = { thread: "t", agent: "north" };
    const before = parsed(await ops.promptBody(request)).messages[1];
    expect(before).toMatchObject({ role: "assistant", state: { thought: 1 } });
    thread.snapshotOf(3, 1); // cutAt is message 0's time, which is message 1's too
    const after = parsed(await ops.promptBody(request)).messages[1]; // after the outline
    expect(after).toEqual({ role: "assistant", content: "message 1" });
  });

  it("property: over any turns (new messages, snapshots catching up, agents, formats, a cap), each body served is the reply built from scratch, byte for byte", async () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant("message" as const),
        from: fc.constantFrom("Ana", "north", "south"),
        state: fc.boolean(),
        size: fc.integer({ min: 0, max: 400 }),
      }),
      fc.record({ kind: fc.constant("snapshot" as const), lag: fc.nat(4), cut: fc.nat(6) }),
      fc.record({
        kind: fc.constant("prompt" as const),
        agent: fc.constantFrom("north", "south"),
        format: fc.constantFrom("openai", "anthropic"),
        from: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        async (steps, capped) => {
          const thread = new FakeThread();
          const ops = createOperations(thread, capped ? { tailCap: 120 } : {});
          let boundary = 0;
          for (const s of steps) {
            const n = thread.messages.length;
            if (s.kind === "message") {
              thread.add(n, s.from, {
                text: `message ${n} ${"x".repeat(s.size)}`,
                ...(s.state ? { state: { n } } : {}),
              });
            } else if (s.kind === "snapshot") {
              const count = Math.max(0, n - s.lag);
              boundary = Math.min(count, boundary + s.cut);
              if (count > 0) thread.snapshotOf(count, boundary);
            } else if (n > 0) {
              const request = {
                thread: "t",
                agent: s.agent,
                format: s.format,
                ...(s.from === undefined
                  ? {}
                  : { from: new Date(Date.UTC(2026, 2, 1, 10, s.from)).toISOString() }),
              };
              const served = (await ops.promptBody(request)).toString("utf8");
              expect(served).toBe(JSON.stringify(await ops.prompt(request)));
            }
          }
        },
      ),
    );
  });
});
