import { describe, expect, it } from "vitest";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { ByteLru } from "../services/util/lru.ts";
import { PromptCache } from "../services/prompt-builder/prompt-cache.ts";
import type { PromptArgs } from "../services/api/requests.ts";

const args: PromptArgs = { thread: "t", agent: "north", from: undefined, format: "openai" };
const bytes = (text: string) => new TextEncoder().encode(text);
const stored = (text: string, revision = 1) => ({
  bytes: bytes(text),
  revision,
  parse: () => JSON.parse(text) as OutlineSnapshot,
});

describe("prompt-builder prompt cache", () => {
  it("serves a body only for equal snapshot bytes and the same newest sequence", () => {
    const cache = new PromptCache(10_000);
    const body = [Buffer.from('{"messages":['), Buffer.from("]}")];
    cache.keep(args, bytes('{"seq":1}'), 5, body);
    expect(cache.body(args, bytes('{"seq":1}'), 5)).toBe(body);
    expect(cache.body({ ...args, agent: "Ana" }, bytes('{"seq":1}'), 5)).toBeUndefined();
    expect(cache.body({ ...args, format: "anthropic" }, bytes('{"seq":1}'), 5)).toBeUndefined();
    expect(cache.body({ ...args, from: "2026-01-01T00:00:00Z" }, bytes('{"seq":1}'), 5)).toBe(
      undefined,
    );
    expect(cache.body(args, bytes('{"seq":1}'), 6)).toBeUndefined(); // a new message: dropped
    expect(cache.body(args, bytes('{"seq":1}'), 5)).toBeUndefined();
    cache.keep(args, bytes('{"seq":1}'), 5, body);
    expect(cache.body(args, bytes('{"seq":2}'), 5)).toBeUndefined(); // same length, other bytes
    cache.keep(args, undefined, 5, body); // a thread without a snapshot
    expect(cache.body(args, bytes('{"seq":2}'), 5)).toBeUndefined();
    cache.keep(args, undefined, 5, body);
    expect(cache.body(args, undefined, 5)).toBe(body);
  });

  it("parses a snapshot once while its bytes stay the same", () => {
    const cache = new PromptCache(10_000);
    const first = cache.snapshot("t", stored('{"seq":1}'));
    expect(cache.snapshot("t", stored('{"seq":1}')).snapshot).toBe(first.snapshot);
    const next = cache.snapshot("t", stored('{"seq":2}'));
    expect(next.snapshot).not.toBe(first.snapshot);
    expect(next.snapshot.seq).toBe(2);
  });

  it("stays within its bound, and keeps nothing at 0", () => {
    const cache = new PromptCache(100);
    for (let i = 0; i < 10; i++)
      cache.keep({ ...args, agent: `a${i}` }, undefined, 1, [Buffer.alloc(10), Buffer.alloc(20)]);
    expect(cache.bytes).toBeLessThanOrEqual(100);
    expect(cache.body({ ...args, agent: "a9" }, undefined, 1)).toBeDefined();
    expect(cache.body({ ...args, agent: "a0" }, undefined, 1)).toBeUndefined();
    const off = new PromptCache(0);
    off.keep(args, undefined, 1, [Buffer.from("{}")]);
    expect(off.body(args, undefined, 1)).toBeUndefined();
    expect(off.bytes).toBe(0);
  });

  it("ByteLru evicts the least recently used and drops what its check refuses", () => {
    const lru = new ByteLru<string, number>(3);
    lru.set("a", 1, 1);
    lru.set("b", 2, 1);
    lru.set("c", 3, 1);
    expect(lru.get("a")).toBe(1);
    lru.set("d", 4, 1);
    expect(lru.get("b")).toBeUndefined();
    expect(lru.get("c", (v) => v !== 3)).toBeUndefined();
    expect(lru.size).toBe(2);
    expect(lru.bytes).toBe(2);
  });
});
