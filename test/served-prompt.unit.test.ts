import { describe, expect, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { OpenAIMessage } from "../shared/prompt.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { createOperations, type PromptReply } from "../services/prompt-builder/operations.ts";
import type { StoredMessage, ThreadReader } from "../services/prompt-builder/reader.ts";

const encoder = new TextEncoder();

/** A thread's stored messages and snapshot in memory, read the way the prompt-builder reads NATS. */
class FakeThread implements ThreadReader {
  readonly messages: StoredMessage[] = [];
  snapshotValue: OutlineSnapshot | undefined;
  #seq = 0;

  add(i: number, from = "Ana"): StoredMessage {
    const message: Message = {
      id: `m${i}`,
      thread: "t",
      at: `2026-03-01T10:${String(i).padStart(2, "0")}:00Z`,
      from,
      role: "user",
      text: `message ${i}`,
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
    return Promise.resolve({ bytes, parse: () => structuredClone(value) });
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

  it("a thread without a snapshot is all tail, in stored order", async () => {
    const thread = new FakeThread();
    for (let i = 0; i < 3; i++) thread.add(i);
    const reply = parsed(await createOperations(thread).promptBody({ thread: "t", agent: "x" }));
    expect(texts(reply)).toEqual([0, 1, 2].map((i) => `Ana: message ${i}`));
    expect(reply.stats.newerThanSnapshot).toBe(3);
  });
});
