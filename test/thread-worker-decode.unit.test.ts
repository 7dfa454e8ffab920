import fc from "fast-check";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { subjects } from "../services/nats/subjects.ts";
import { decodeChatBody, decodeChatEvent } from "../services/nats/decode.ts";
import { describeIssues, messageCreatedSchema, threadDeletedSchema } from "../shared/events.ts";
import { invalidUtf8At, utf8Text } from "../shared/bytes.ts";
import { parseChatEvent } from "../services/cli/replay/read.ts";

const s = subjects(DEFAULT_NAMES);
const encoder = new TextEncoder();

interface BadEvent {
  name: string;
  subject: string;
  payload: { raw?: string; bytes?: number[]; parts?: (string | number[])[]; json?: unknown };
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
    ("raw" in e.payload || "bytes" in e.payload || "parts" in e.payload || "json" in e.payload),
);

function bytesOf(p: BadEvent["payload"]): Uint8Array {
  if (p.raw !== undefined) return encoder.encode(p.raw);
  if (p.bytes !== undefined) return new Uint8Array(p.bytes);
  if (p.parts !== undefined) {
    return new Uint8Array(
      p.parts.flatMap((part) => (typeof part === "string" ? [...encoder.encode(part)] : part)),
    );
  }
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

describe("a body that is UTF-8 but not JSON", () => {
  const reasonOf = (data: Uint8Array): string => {
    const event = decodeChatBody("t", "message.created", "chat.t.message.created", data);
    return event.kind === "invalid" ? event.reason : "";
  };

  it("is refused as such, naming the byte where the parser stopped, not as not UTF-8", () => {
    // 'ééé' is 3 characters and 6 bytes: the parser's position 14 is byte 17 of the body.
    const data = encoder.encode('{"text":"ééé" x}');
    expect(reasonOf(data)).toBe(
      `message.created body is UTF-8 but not JSON (Expected ',' or '}' after property value at byte 17); publish one JSON object as README.md, "The contract", describes`,
    );
    expect(String.fromCharCode(data[17] ?? 0)).toBe("x");
    // A BOM the decoder drops still counts: the bytes are the body's.
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"a":1}x')]);
    expect(reasonOf(bom)).toMatch(/ at byte 10\)/);
    expect(String.fromCharCode(bom[10] ?? 0)).toBe("x");
    // V8 quotes the body after an unexpected token: its excerpt stays out of the reason.
    expect(reasonOf(encoder.encode("SECRET launch code"))).toBe(
      `message.created body is UTF-8 but not JSON (Unexpected token 'S'); publish one JSON object as README.md, "The contract", describes`,
    );
  });

  it("any UTF-8 that does not parse: that reason, and a byte named is a character's start", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 30 }), fc.string(), (text, junk) => {
        const body = `${JSON.stringify({ text })}${junk}`;
        try {
          JSON.parse(body);
          return;
        } catch {
          // not JSON: the case here
        }
        const data = encoder.encode(body);
        const reason = reasonOf(data);
        expect(reason).toMatch(/^message\.created body is UTF-8 but not JSON \(/);
        expect(reason).not.toMatch(/ position /);
        const at = / at byte (\d+)\)/.exec(reason)?.[1];
        if (at === undefined) return;
        expect(Number(at)).toBeLessThanOrEqual(data.length);
        expect(utf8Text(data.subarray(0, Number(at)))).toBeDefined();
        expect(utf8Text(data.subarray(Number(at)))).toBeDefined();
      }),
      { numRuns: 1_000 },
    );
  });
});

/** Bytes that are mostly UTF-8 (a message body), some with a few bytes replaced by any byte. */
const mostlyUtf8 = fc
  .tuple(
    fc.string({ unit: "grapheme", maxLength: 40 }),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
  )
  .map(([text, changes]) => {
    const body = encoder.encode(
      JSON.stringify({
        id: "m",
        thread: "t",
        at: "2026-01-01T00:00:01Z",
        from: "Ana",
        role: "user",
        text,
      }),
    );
    for (const [where, byte] of changes) body[where % body.length] = byte;
    return body;
  });

describe("a body that is not UTF-8", () => {
  it("is refused with the byte where it stops being UTF-8, not applied with U+FFFD", () => {
    // Latin-1 "café": the é is the one byte 0xE9, which UTF-8 would write as 0xC3 0xA9.
    const head = encoder.encode(
      '{"id":"m","thread":"t","at":"2026-01-01T00:00:01Z","from":"Ana","role":"user","text":"caf',
    );
    const data = new Uint8Array([...head, 0xe9, ...encoder.encode('"}')]);
    expect(decodeChatBody("t", "message.created", "chat.t.message.created", data)).toEqual({
      kind: "invalid",
      reason: `message.created body is not valid UTF-8 at byte ${head.length} (0xE9); encode the whole body as UTF-8 (a text in Latin-1 or Windows-1252 must be converted), README.md, "The contract"`,
    });
    const deleted = new Uint8Array([
      ...encoder.encode('{"thread":"t","at":"x'),
      0xc0,
      0x80,
      0x22,
      0x7d,
    ]);
    const refused = decodeChatBody("t", "thread.deleted", "chat.t.thread.deleted", deleted);
    expect(refused.kind === "invalid" ? refused.reason : "").toMatch(
      /^thread.deleted body is not valid UTF-8 at byte 21 \(0xC0\)/,
    );
  });

  it("invalidUtf8At finds where the fatal decoder stops, and nothing in well-formed UTF-8", () => {
    const loose = new TextDecoder();
    const check = (bytes: Uint8Array) => {
      const at = invalidUtf8At(bytes);
      expect(at === -1, `${Array.from(bytes).join(",")}`).toBe(utf8Text(bytes) !== undefined);
      if (at === -1) return;
      // Everything before is UTF-8, and a decoder puts its first U+FFFD right there.
      const before = bytes.subarray(0, at);
      expect(utf8Text(before)).toBeDefined();
      expect(loose.decode(bytes).startsWith(`${loose.decode(before)}\uFFFD`)).toBe(true);
    };
    // Each edge of Unicode's table of well-formed sequences, alone, cut short and at the end.
    for (const seq of [
      [0x7f],
      [0x80],
      [0xc1, 0x80],
      [0xc2, 0x80],
      [0xdf, 0xbf],
      [0xe0, 0x9f, 0x80],
      [0xe0, 0xa0, 0x80],
      [0xed, 0x9f, 0xbf],
      [0xed, 0xa0, 0x80],
      [0xef, 0xbf, 0xbf],
      [0xf0, 0x8f, 0x80, 0x80],
      [0xf0, 0x90, 0x80, 0x80],
      [0xf4, 0x8f, 0xbf, 0xbf],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf5, 0x80, 0x80, 0x80],
      [0xff],
      [0xfe, 0xff],
    ]) {
      for (const cut of [seq, seq.slice(0, -1), [...seq.slice(0, -1), 0x41]]) {
        check(new Uint8Array([0x61, ...cut]));
        check(new Uint8Array([0x61, ...cut, 0x62]));
      }
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 12 }), (b) => check(b)),
      { numRuns: 5_000 },
    );
    fc.assert(
      fc.property(mostlyUtf8, (b) => check(b)),
      { numRuns: 2_000 },
    );
  });

  it("the replay's reader refuses what the worker refuses, and reads what it applies the same", () => {
    let refused = 0;
    fc.assert(
      fc.property(mostlyUtf8, (data) => {
        const worker = decodeChatEvent(s, "chat.t.message.created", data).event;
        const replay = parseChatEvent(DEFAULT_NAMES, {
          subject: "chat.t.message.created",
          seq: 1,
          data,
        });
        if (worker.kind === "invalid") {
          refused += 1;
          expect(replay).toBeUndefined();
        } else {
          expect(replay?.event).toEqual({
            type: "message.created",
            message: worker.kind === "message" ? worker.message : undefined,
            seq: 1,
          });
        }
      }),
      { numRuns: 2_000 },
    );
    expect(refused).toBeGreaterThan(100);
    // The audit's case: 0xFF 0xFE inside the text.
    const head = encoder.encode(
      '{"id":"m","thread":"t","at":"2026-01-01T00:00:01Z","from":"Ana","role":"user","text":"a',
    );
    const data = new Uint8Array([...head, 0xff, 0xfe, ...encoder.encode('b"}')]);
    expect(
      parseChatEvent(DEFAULT_NAMES, { subject: "chat.t.message.created", seq: 1, data }),
    ).toBeUndefined();
  });
});
