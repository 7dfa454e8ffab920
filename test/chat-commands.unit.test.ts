import type { JetStreamClient } from "@nats-io/jetstream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import type { PromptBuilderClient } from "../services/cli/ask.ts";
import { echoAgent } from "../services/chat/agent.ts";
import { createChat } from "../services/chat/chat.ts";
import { formatOutline } from "../services/chat/views.ts";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { ApiError } from "../services/api/api-error.ts";

function snapshot(fields: Partial<OutlineSnapshot> = {}): OutlineSnapshot {
  return {
    thread: "t1",
    count: 0,
    boundary: 0,
    since: null,
    cutAt: null,
    complete: true,
    bytes: 0,
    seq: 0,
    lines: [],
    tail: [],
    tailSeqs: [],
    pending: { jobs: 0, cuts: 0, merging: false },
    ...fields,
  };
}

const line = (id: number, n: number) => ({
  id,
  n,
  level: Math.log2(n),
  text: `line ${id}+${n}`,
  bytes: 20,
  until: "2026-01-01T00:00:00Z",
});

/**
 * A thread as the prompt-builder shows it: every published message in the prompt, the
 * snapshot (set by the test, as the worker would publish it) trailing behind.
 */
function fakeSystem(initial?: OutlineSnapshot) {
  const published: Message[] = [];
  const state = { snapshot: initial };
  const js = {
    publish: (_subject: string, data: string) => {
      published.push(JSON.parse(data) as Message);
      return Promise.resolve({ seq: published.length, stream: "CHAT", duplicate: false });
    },
  } as unknown as JetStreamClient;
  const operations: PromptBuilderClient = {
    // As the prompt-builder answers before the worker wrote a snapshot: the stored messages.
    outline: () =>
      state.snapshot
        ? Promise.resolve(state.snapshot)
        : published.length > 0
          ? Promise.resolve(snapshot({ count: published.length, seq: published.length }))
          : Promise.reject(new ApiError(404, "THREAD_NOT_FOUND", "no thread 't1'")),
    prompt: () => {
      const seq = state.snapshot?.seq ?? 0;
      return Promise.resolve({
        messages: published.map((m) =>
          m.role === "assistant"
            ? { role: "assistant" as const, content: m.text }
            : { role: "user" as const, content: `${m.from}: ${m.text}` },
        ),
        stats: {
          outlineBytes: state.snapshot?.bytes ?? 0,
          tailTokens: 10,
          lines: state.snapshot?.lines.length ?? 0,
          pending: 0,
          newerThanSnapshot: published.length - seq,
          snapshotSeq: seq,
        },
      });
    },
    tools: () => Promise.resolve([]),
    zoom: () => Promise.reject(new Error("not used")),
  };
  const printed: string[] = [];
  const chat = createChat({
    js,
    names: { ...DEFAULT_NAMES },
    operations,
    agent: echoAgent(),
    thread: "t1",
    user: "Ana",
    agentName: "agent",
    print: (l) => printed.push(...l.split("\n")),
  });
  return { chat, state, published, printed };
}

describe("chat's /outline", () => {
  it("says the snapshot trails the newest message, and by how many", async () => {
    const { chat, state, printed } = fakeSystem();
    await chat.observeCuts();
    await chat.handle("hello");
    await chat.handle("/outline");
    expect(printed.at(-1)).toBe(
      "outline: 0 lines, 0 bytes, boundary 0 of 2 messages: no snapshot yet (the worker has not written one): the stored messages, all whole in prompts",
    );
    // The worker has folded in the first message, not yet the agent's answer.
    state.snapshot = snapshot({ count: 1, seq: 1 });
    printed.length = 0;
    await chat.handle("/outline");
    expect(printed).toEqual([
      "outline: 0 lines, 0 bytes, boundary 0 of 1 messages: snapshot at message 1; 1 newer not in it yet (the snapshot trails the newest messages; prompts include them whole)",
    ]);

    state.snapshot = snapshot({ count: 2, seq: 2, pending: { jobs: 3, cuts: 1, merging: false } });
    printed.length = 0;
    await chat.handle("/outline");
    expect(printed).toEqual([
      "outline: 0 lines, 0 bytes, boundary 0 of 2 messages: snapshot at message 2, the newest; pending: 3 summaries, 1 cut",
    ]);
  });

  it("counts the snapshot's messages and the newer ones as the thread's", () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(50), (count, newer) => {
        const [head] = formatOutline(snapshot({ count, seq: count }), newer);
        expect(head).toContain(`of ${count} messages: snapshot at message ${count}`);
        if (newer === 0) expect(head).toContain(", the newest");
        else expect(head).toContain(`; ${newer} newer not in it yet`);
      }),
    );
  });
});

describe("chat's /stats", () => {
  it("counts cuts and merges since the chat started, and labels the thread's lifetime ones", async () => {
    // A thread that had a life before this chat: 2600 messages cut into 32 lines.
    const before = Array.from({ length: 32 }, (_, i) => line(i * 64, 64));
    const { chat, state, printed } = fakeSystem(
      snapshot({ count: 2650, boundary: 2048, seq: 2650, lines: before }),
    );
    await chat.observeCuts();
    await chat.handle("hello");
    // One cut (the boundary moved) and its merges: 2048 → 2112 in 31 lines.
    state.snapshot = snapshot({
      count: 2652,
      boundary: 2112,
      seq: 2652,
      lines: [line(0, 2048), ...Array.from({ length: 30 }, (_, i) => line(2048 + i * 2, 2))],
    });
    printed.length = 0;
    await chat.handle("/stats");
    expect(printed).toEqual([
      "stats: tail ~10 tokens, outline 0 bytes, model calls 0, zoom calls 0",
      "  since this chat started: 1 cut seen, 65 merges",
      "  the thread's whole life: 2112 messages cut, 2081 merges",
    ]);
  });

  it("counts a new thread's cuts and merges as this chat's", async () => {
    const { chat, state, printed } = fakeSystem();
    await chat.observeCuts();
    await chat.handle("hello");
    state.snapshot = snapshot({ count: 2, boundary: 1, seq: 2, lines: [line(0, 1)] });
    printed.length = 0;
    await chat.handle("/stats");
    expect(printed.slice(1)).toEqual([
      "  since this chat started: 1 cut seen, 0 merges",
      "  the thread's whole life: 1 message cut, 0 merges",
    ]);
  });
});
