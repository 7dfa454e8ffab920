import fc from "fast-check";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { subjects } from "../services/nats/subjects.ts";
import { decodeChatBody, decodeChatEvent } from "../services/thread-worker/decode.ts";
import { describeIssues, messageCreatedSchema, threadDeletedSchema } from "../shared/events.ts";

const s = subjects(DEFAULT_NAMES);
const encoder = new TextEncoder();

interface BadEvent {
  name: string;
  subject: string;
  payload: { raw?: string; bytes?: number[]; json?: unknown };
  expect: string;
  reason?: string;
}

// The corpus the bad-input integration test publishes; here the entries the decoder alone
// decides (a body given as raw text, bytes or JSON; not those refused for the thread's state).
const corpus = (
  JSON.parse(readFileSync("test/fixtures/bad-events.json", "utf8")) as { events: BadEvent[] }
).events.filter(
  (e) =>
    e.expect === "dead" &&
    !e.reason?.startsWith("thread deleted") &&
    ("raw" in e.payload || "bytes" in e.payload || "json" in e.payload),
);

function bytesOf(p: BadEvent["payload"]): Uint8Array {
  if (p.raw !== undefined) return encoder.encode(p.raw);
  if (p.bytes !== undefined) return new Uint8Array(p.bytes);
  return encoder.encode(JSON.stringify(p.json));
}

/** The decoder as it was: the schema decides every body. */
function bySchema(subject: string, data: Uint8Array) {
  const parsed = s.parseChat(subject);
  if (!parsed) return { kind: "invalid" as const };
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data));
  } catch {
    return { kind: "invalid" as const };
  }
  const schema = parsed.kind === "message.created" ? messageCreatedSchema : threadDeletedSchema;
  const result = schema.safeParse(body);
  if (!result.success) return { kind: "invalid" as const, reason: describeIssues(result.error) };
  if (result.data.thread !== parsed.thread) return { kind: "invalid" as const };
  if (parsed.kind === "thread.deleted") return { kind: "deleted" as const, at: result.data.at };
  return { kind: "message" as const, message: result.data };
}

describe("decodeChatEvent", () => {
  it.each(corpus.map((e) => [e.name, e] as const))(
    "dead-letters %s with its reason",
    (_name, e) => {
      const { event } = decodeChatEvent(s, e.subject, bytesOf(e.payload));
      expect(event.kind).toBe("invalid");
      expect(event.kind === "invalid" ? event.reason : "").toMatch(new RegExp(e.reason ?? ""));
    },
  );

  it("decodes a plain message as the schema does, key order included", () => {
    const message = {
      id: "m1",
      thread: "t",
      at: "2026-01-01T00:00:01.000Z",
      from: "Ana",
      to: "north",
      role: "user",
      text: "hi",
      state: { a: 1 },
      steps: [{ tool: "x" }],
    };
    const data = encoder.encode(JSON.stringify(message));
    const { thread, event } = decodeChatEvent(s, "chat.t.message.created", data);
    expect(thread).toBe("t");
    expect(JSON.stringify(event)).toBe(JSON.stringify(bySchema("chat.t.message.created", data)));
    expect(decodeChatBody("t", "message.created", "chat.t.message.created", data)).toEqual(event);
  });

  it("names the subject's thread and the body's when they differ (fast path and schema alike)", () => {
    for (const at of ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:01Z"]) {
      const data = encoder.encode(
        JSON.stringify({ id: "m", thread: "u", at, from: "Ana", role: "user", text: "x" }),
      );
      const { event } = decodeChatEvent(s, "chat.t.message.created", data);
      expect(event).toEqual({
        kind: "invalid",
        reason:
          "message.created body names thread 'u' but arrived on the subject of thread 't'; publish it on chat.u.message.created",
      });
    }
  });

  it("accepts and refuses exactly what the schema does, with the same value", () => {
    const field = <T>(good: fc.Arbitrary<T>) =>
      fc.oneof({ weight: 5, arbitrary: good }, { weight: 1, arbitrary: fc.jsonValue() });
    const body = fc.record(
      {
        id: field(fc.string({ minLength: 0, maxLength: 260 })),
        thread: field(fc.constantFrom("t", "t", "t", "u", "", "t.x")),
        at: field(
          fc.constantFrom(
            "2026-01-01T00:00:01.000Z",
            "2026-01-01T00:00:01Z",
            "2026-02-30T00:00:00.000Z",
            "2026-01-01 00:00:01Z",
          ),
        ),
        from: field(fc.string({ maxLength: 3 })),
        to: field(fc.string({ maxLength: 3 })),
        role: field(fc.constantFrom("user", "assistant", "tool", "system", "admin")),
        text: field(fc.string({ maxLength: 20 })),
        state: fc.jsonValue(),
        steps: field(fc.array(fc.jsonValue(), { maxLength: 2 })),
        extra: fc.jsonValue(),
      },
      // Mostly the keys a message has, so valid bodies are common (the direct check's path).
      { requiredKeys: ["id", "thread", "at", "from", "role", "text"] },
    );
    let valid = 0;
    fc.assert(
      fc.property(body, fc.constantFrom("message.created", "thread.deleted"), (b, kind) => {
        const subject = `chat.t.${kind}`;
        const data = encoder.encode(JSON.stringify(b));
        const ours = decodeChatEvent(s, subject, data).event;
        const theirs = bySchema(subject, data);
        expect(ours.kind).toBe(theirs.kind);
        if (ours.kind !== "invalid") {
          valid += 1;
          expect(JSON.stringify(ours)).toBe(JSON.stringify(theirs));
        } else if (theirs.reason) expect(ours.reason).toContain(theirs.reason);
      }),
      { numRuns: 2_000 },
    );
    expect(valid).toBeGreaterThan(100);
  });
});
