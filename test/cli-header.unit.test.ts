import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { header } from "../services/cli/outline.ts";
import { decodeChatBody } from "../services/nats/decode.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";

const snapshot = (fields: Partial<OutlineSnapshot>): OutlineSnapshot =>
  ({
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
    ...fields,
  }) as OutlineSnapshot;

describe("what a newcomer reads", () => {
  it("the outline header counts in words and says when the outline covers nothing yet", () => {
    expect(header(snapshot({ count: 1, tail: ["m0"], seq: 1 }))).toBe(
      "thread t1: 1 message; outline 0 lines, 0 bytes, covers none yet; tail 1 whole; cut at never; seq 1",
    );
    const line = { id: 0, n: 2, level: 1, text: "x", bytes: 1, until: "" };
    expect(
      header(snapshot({ count: 3, boundary: 2, lines: [line], bytes: 1, tail: ["m2"] })),
    ).toContain("3 messages; outline 1 line, 1 byte, covers messages 0–1;");
  });

  it("a dead letter's reason points to the README, which ships with the code", () => {
    const encode = (text: string) => new TextEncoder().encode(text);
    const subject = "chat.t1.message.created";
    for (const body of ['{"id": 1}', "not json"]) {
      const event = decodeChatBody("t1", "message.created", subject, encode(body));
      expect(event).toMatchObject({ kind: "invalid" });
      const reason = (event as { reason: string }).reason;
      expect(reason).toContain('README.md, "The contract"');
      expect(reason).not.toContain("SPEC");
    }
  });

  it("the README's compose section names OUTLINE_API_TOKEN", () => {
    const readme = readFileSync("README.md", "utf8");
    const compose = readme.slice(readme.indexOf("`docker compose up --build`"));
    expect(compose.slice(0, 800)).toContain("OUTLINE_API_TOKEN");
  });
});
