import fc from "fast-check";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimMessageId, eraseIdIndex, idIndexFilter, idKey } from "../services/nats/id-index.ts";
import { FakeStream, subjectMatches } from "./support/fake-stream.ts";

const BUCKET = "outline-ids";
const encoder = new TextEncoder();

function index() {
  const stream = new FakeStream(`KV_${BUCKET}`);
  return { stream, kv: stream.kv(BUCKET), jsm: stream.manager() };
}

describe("the message id index (which CHAT sequence first carried an id)", () => {
  it("a key is the thread and sha256(id) in base64url, 22 characters: keys stored before still match", () => {
    for (const id of ["m-1", "thread-é-中-😀", "", "x".repeat(500)]) {
      const digest = createHash("sha256").update(id).digest("base64url").slice(0, 22);
      expect(idKey("t1", id)).toBe(`t1.${digest}`);
    }
  });

  it("a first claim is new; a claim of the same id from another sequence is a duplicate naming the first", async () => {
    const { kv } = index();
    expect(await claimMessageId(kv, "t1", "m-1", 10)).toEqual({ type: "new" });
    expect(await claimMessageId(kv, "t1", "m-1", 11)).toEqual({ type: "duplicate", firstSeq: 10 });
    expect(await claimMessageId(kv, "t1", "m-2", 12)).toEqual({ type: "new" });
    // The same sequence again is a redelivery after a crash between claim and save: still new.
    expect(await claimMessageId(kv, "t1", "m-1", 10)).toEqual({ type: "new" });
  });

  it("an id is claimed per thread: the same id in another thread is new there", async () => {
    const { kv } = index();
    await claimMessageId(kv, "t1", "m-1", 1);
    expect(await claimMessageId(kv, "t2", "m-1", 2)).toEqual({ type: "new" });
    expect(await claimMessageId(kv, "t2", "m-1", 3)).toEqual({ type: "duplicate", firstSeq: 2 });
  });

  it("a key holding a delete marker or garbage is claimed anew for the sequence", async () => {
    const { kv, stream } = index();
    stream.append(`$KV.${BUCKET}.${idKey("t1", "gone")}`, new Uint8Array(), "DEL");
    expect(await claimMessageId(kv, "t1", "gone", 5)).toEqual({ type: "new" });
    await kv.put(idKey("t1", "junk"), encoder.encode("not a number"));
    expect(await claimMessageId(kv, "t1", "junk", 6)).toEqual({ type: "new" });
    expect(await claimMessageId(kv, "t1", "junk", 7)).toEqual({ type: "duplicate", firstSeq: 6 });
  });

  it("property: a claim is new exactly when no other sequence claimed the (thread, id) before", async () => {
    const claim = fc.record({
      thread: fc.constantFrom("a", "b", "a-b"),
      id: fc.constantFrom("x", "y", "z", "x.y", "*", ">"),
      seq: fc.integer({ min: 1, max: 6 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(claim, { maxLength: 30 }), async (claims) => {
        const { kv } = index();
        const first = new Map<string, number>();
        for (const c of claims) {
          const key = `${c.thread}\0${c.id}`;
          const known = first.get(key);
          if (known === undefined) first.set(key, c.seq);
          const expected =
            known === undefined || known === c.seq
              ? { type: "new" }
              : { type: "duplicate", firstSeq: known };
          expect(await claimMessageId(kv, c.thread, c.id, c.seq)).toEqual(expected);
        }
      }),
    );
  });

  it("every key a thread's claims write is under its erase filter, and no other thread's", async () => {
    const { kv, stream } = index();
    const ids = ["m-1", "m.2", "*", ">", "ü"];
    for (const [i, id] of ids.entries()) await claimMessageId(kv, "t1", id, i + 1);
    for (const [i, id] of ids.entries()) await claimMessageId(kv, "t1-x", id, i + 1);
    const filter = idIndexFilter(BUCKET, "t1");
    const written = stream.written;
    expect(written.filter((s) => subjectMatches(filter, s))).toHaveLength(ids.length);
    expect(written.filter((s) => !subjectMatches(filter, s))).toHaveLength(ids.length);
  });

  it.each([true, false])(
    "erasing a thread's index (purge %s) frees its ids and keeps every other thread's",
    async (purge) => {
      const { kv, jsm } = index();
      for (const [seq, thread] of [
        [1, "t1"],
        [2, "t2"],
        [3, "t1"],
      ] as const) {
        await claimMessageId(kv, thread, `m${seq}`, seq);
      }
      expect(await eraseIdIndex(jsm, BUCKET, "t1", purge)).toBe(2);
      // A new thread of the same id starts with nothing claimed.
      expect(await claimMessageId(kv, "t1", "m1", 7)).toEqual({ type: "new" });
      expect(await claimMessageId(kv, "t1", "m3", 8)).toEqual({ type: "new" });
      // The other thread's claims stand.
      expect(await claimMessageId(kv, "t2", "m2", 9)).toEqual({ type: "duplicate", firstSeq: 2 });
    },
  );
});
