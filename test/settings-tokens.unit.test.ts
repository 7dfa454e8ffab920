import { describe, expect, it } from "vitest";
import { cutToBytes, utf8Bytes } from "../shared/bytes.ts";
import { SettingsError } from "../shared/errors.ts";
import { describeIssues, messageCreatedSchema, threadDeletedSchema } from "../shared/events.ts";
import { fromLineName, lineName, parseLineName } from "../shared/names.ts";
import { freeLeafText, freeParentText, renderSource } from "../shared/render.ts";
import { DEFAULT_SETTINGS, parseSettings } from "../shared/settings.ts";
import { estimateMessageTokens, estimateTextTokens } from "../shared/tokens.ts";

function settingsError(env: Record<string, string>): SettingsError {
  try {
    parseSettings(env);
  } catch (e) {
    if (e instanceof SettingsError) return e;
    throw e;
  }
  throw new Error("expected a SettingsError");
}

describe("settings", () => {
  it("defaults match SPEC §3", () => {
    expect(parseSettings({})).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS).toMatchObject({
      line: 512,
      tail: [12000, 48000],
      outline: [64000, 128000],
      summarizer: "extractive",
      concurrency: 8,
      host: "127.0.0.1",
      port: 8080,
    });
  });

  it("reads every variable", () => {
    const s = parseSettings({
      HISTORY_LINE: "256",
      HISTORY_TAIL: "200,400",
      HISTORY_OUTLINE: "2000,4000",
      HISTORY_SUMMARIZER: "openai/gpt-4o-mini",
      HISTORY_CONCURRENCY: "2",
      HISTORY_GROUP: "4",
      HISTORY_SEARCH: "on",
      NATS_URL: "nats://127.0.0.1:4222",
      HOST: "0.0.0.0",
      PORT: "9000",
    });
    expect(s).toEqual({
      line: 256,
      tail: [200, 400],
      outline: [2000, 4000],
      summarizer: "openai/gpt-4o-mini",
      concurrency: 2,
      group: 4,
      search: true,
      natsUrl: "nats://127.0.0.1:4222",
      host: "0.0.0.0",
      port: 9000,
    });
  });

  it("a setting that does not parse names the variable and what to write", () => {
    expect(settingsError({ HISTORY_TAIL: "48000" }).message).toMatch(/^HISTORY_TAIL: .*low,high/);
    expect(settingsError({ HISTORY_TAIL: "400,200" }).setting).toBe("HISTORY_TAIL");
    expect(settingsError({ HISTORY_LINE: "big" }).message).toMatch(
      /^HISTORY_LINE: 'big' is not a whole number/,
    );
    expect(settingsError({ HISTORY_SUMMARIZER: "gpt4" }).message).toMatch(
      /extractive.*openai\/<model>/,
    );
    expect(settingsError({ HISTORY_CONCURRENCY: "0" }).setting).toBe("HISTORY_CONCURRENCY");
    // A negative number is a whole number: the message gives the range it is outside.
    expect(settingsError({ HISTORY_CONCURRENCY: "-1" }).message).toMatch(
      /^HISTORY_CONCURRENCY: '-1' is not a whole number from 1 to \d+/,
    );
    expect(settingsError({ HISTORY_GROUP: "0" }).message).toMatch(
      /^HISTORY_GROUP: 0 is out of range; use a number from 1 to 64/,
    );
    expect(settingsError({ PORT: "70000" }).setting).toBe("PORT");
    expect(settingsError({ NATS_URL: "http://x" }).setting).toBe("NATS_URL");
    expect(settingsError({ HISTORY_OUTLINE: "100,200" }).message).toMatch(/two lines/);
  });
});

describe("token estimate", () => {
  it("about 4 ASCII characters a token, a CJK character about one, an emoji two", () => {
    expect(estimateTextTokens("a".repeat(400))).toBe(100);
    expect(estimateTextTokens("中".repeat(100))).toBe(100);
    expect(estimateTextTokens("😀".repeat(100))).toBe(200);
    expect(estimateTextTokens("é".repeat(100))).toBe(50);
  });

  it("a message costs its text, its tool steps, its author and a fixed overhead", () => {
    const base = { from: "Ana", text: "hello world" };
    const plain = estimateMessageTokens(base);
    expect(plain).toBe(4 + estimateTextTokens("Ana") + estimateTextTokens("hello world"));
    const withSteps = estimateMessageTokens({
      ...base,
      steps: [{ tool: "grep", output: "x".repeat(400) }],
    });
    expect(withSteps).toBeGreaterThan(plain + 100);
  });
});

describe("names, bytes and free nodes", () => {
  it("line names id+n ↔ (level, index) with the validity rule", () => {
    expect(lineName({ level: 2, index: 2 })).toBe("8+4");
    expect(fromLineName(8, 4)).toEqual({ level: 2, index: 2 });
    expect(parseLineName("0+1")).toEqual({ level: 0, index: 0 });
    expect(() => parseLineName("6+4")).toThrow(/multiple of n/);
    expect(() => parseLineName("8+3")).toThrow(/power of two/);
    expect(() => parseLineName("x")).toThrow(/id\+n/);
  });

  it("cuts UTF-8 on a character boundary", () => {
    expect(utf8Bytes("a中😀")).toBe(1 + 3 + 4);
    expect(cutToBytes("a中😀", 5)).toBe("a中");
    expect(cutToBytes("a中😀", 3)).toBe("a");
    expect(cutToBytes("abc", 10)).toBe("abc");
  });

  it("a leaf source is `from → to: text` with newlines as spaces; free when it fits", () => {
    const m = {
      id: "1",
      thread: "t",
      at: "2026-01-01T00:00:00Z",
      from: "Ana",
      to: "north",
      role: "user" as const,
      text: "hi\n\nthere",
    };
    expect(renderSource(m)).toBe("Ana → north: hi there");
    expect(freeLeafText(m, 512)).toBe("Ana → north: hi there");
    expect(freeLeafText(m, 10)).toBeUndefined();
    expect(freeLeafText({ ...m, steps: [{ tool: "x" }] }, 512)).toBeUndefined();
    expect(freeParentText("a", "b", 5)).toBe("a / b");
    expect(freeParentText("a", "b", 4)).toBeUndefined();
  });
});

describe("event schemas", () => {
  const good = {
    id: "m1",
    thread: "t-1_A",
    at: "2026-11-30T08:15:00Z",
    from: "Ana",
    role: "user",
    text: "hi",
  };

  it("accepts a valid message.created and thread.deleted", () => {
    expect(messageCreatedSchema.parse(good)).toEqual(good);
    expect(
      threadDeletedSchema.parse({ thread: "t", at: "2026-11-30T08:15:00+01:00" }),
    ).toBeTruthy();
  });

  it.each([
    ["thread id with a dot", { ...good, thread: "a.b" }, /thread/],
    ["thread id '*'", { ...good, thread: "*" }, /thread/],
    ["thread id '>'", { ...good, thread: ">" }, /thread/],
    ["empty thread id", { ...good, thread: "" }, /thread/],
    ["200-character thread id", { ...good, thread: "x".repeat(200) }, /thread/],
    ["non-ASCII thread id", { ...good, thread: "ñandú" }, /thread/],
    ["`at` not ISO-8601", { ...good, at: "yesterday" }, /at: must be an ISO-8601/],
    ["unknown role", { ...good, role: "bot" }, /role/],
    ["missing text", { ...good, text: undefined }, /text/],
  ])("rejects %s with a reason naming the field", (_, body, reason) => {
    const result = messageCreatedSchema.safeParse(body);
    expect(result.success).toBe(false);
    if (!result.success) expect(describeIssues(result.error)).toMatch(reason);
  });
});
