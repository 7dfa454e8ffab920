import { describe, expect, it } from "vitest";
import { MessageCache } from "../services/nats/message-cache.ts";

describe("prompt-builder message cache", () => {
  it("answers a hit only for the same subject and id", () => {
    const cache = new MessageCache<string>(1_000);
    cache.set(7, "chat.a.message.created", "m1", "A", 10);
    expect(cache.get(7, "chat.a.message.created")).toBe("A");
    expect(cache.get(7, "chat.a.message.created", "m1")).toBe("A");
    // Another id at the sequence (a recreated stream): dropped, read again by the caller.
    expect(cache.get(7, "chat.a.message.created", "other")).toBeUndefined();
    expect(cache.get(7, "chat.a.message.created")).toBeUndefined();
    cache.set(8, "chat.a.message.created", "m2", "B", 10);
    expect(cache.get(8, "chat.b.message.created")).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });

  it("evicts the least recently used past its byte bound", () => {
    const cache = new MessageCache<number>(30);
    for (const seq of [1, 2, 3]) cache.set(seq, "s", `m${seq}`, seq, 10);
    expect(cache.get(1, "s")).toBe(1); // 1 is now the most recent
    cache.set(4, "s", "m4", 4, 10);
    expect(cache.get(2, "s")).toBeUndefined();
    expect([1, 3, 4].map((seq) => cache.get(seq, "s"))).toEqual([1, 3, 4]);
    expect(cache.bytes).toBe(30);
    cache.set(5, "s", "m5", 5, 31); // larger than the bound: not kept
    expect(cache.get(5, "s")).toBeUndefined();
  });
});
