import { hash } from "node:crypto";
import type { JetStreamManager } from "@nats-io/jetstream";
import { NEW_ID, type IdClaim } from "../../shared/message-ids.ts";
import { eraseSubject } from "./erase.ts";
import { isWrongLastSequence, type KvWrites } from "./kv-writer.ts";
import { kvStream, kvSubject } from "./buckets.ts";

/**
 * Which CHAT sequence first carried each message id of a thread, in the `<kvBucket>-ids` bucket,
 * key `<thread>.<hash(id)>`. Nats-Msg-Id de-duplicates only for 2 minutes and the actor's tail
 * only knows recent ids; this index makes "a message id is applied once" hold for the thread's
 * whole life. It is bounded the way CHAT is: one small key per message the thread ever had (≈100
 * bytes), erased with the thread, and read or written once per new message with a single
 * create-if-absent (no read-then-write race between two writers).
 */

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** 128 bits of SHA-256, base64url: a valid KV key token whatever characters the id has. */
export function idKey(thread: string, id: string): string {
  // One-shot: no Hash object per message (~1 µs against ~5 µs for createHash().update().digest()).
  const digest = hash("sha256", id, "base64url").slice(0, 22);
  return `${thread}.${digest}`;
}

/**
 * Records that `id` is first carried by `seq`, or says which sequence carried it first. Claiming
 * again with the same sequence (a redelivery after a crash between claim and save) is "new".
 */
export async function claimMessageId(
  kv: KvWrites,
  thread: string,
  id: string,
  seq: number,
): Promise<IdClaim> {
  const key = idKey(thread, id);
  try {
    await kv.create(key, encoder.encode(String(seq)));
    return NEW_ID;
  } catch (err) {
    if (!isWrongLastSequence(err)) throw err;
  }
  const entry = await kv.get(key);
  const firstSeq = entry && entry.operation === "PUT" ? claimedSeq(entry.value) : undefined;
  if (firstSeq === undefined) {
    // A delete marker (or garbage): claim it for this sequence.
    await kv.put(key, encoder.encode(String(seq)));
    return NEW_ID;
  }
  return firstSeq === seq ? NEW_ID : { type: "duplicate", firstSeq };
}

/** The CHAT sequence an index entry's value names; undefined for garbage (claimed again). */
export function claimedSeq(value: Uint8Array): number | undefined {
  const seq = Number(decoder.decode(value));
  return Number.isSafeInteger(seq) ? seq : undefined;
}

/** The subject filter of every key `claimMessageId` writes for `thread` in bucket `idsBucket`. */
export function idIndexFilter(idsBucket: string, thread: string): string {
  return kvSubject(idsBucket, `${thread}.>`);
}

/** Erases the thread's whole id index (its thread.deleted); returns how many entries went. */
export function eraseIdIndex(
  jsm: JetStreamManager,
  idsBucket: string,
  thread: string,
  purge: boolean,
): Promise<number> {
  return eraseSubject(jsm, kvStream(idsBucket), idIndexFilter(idsBucket, thread), { purge });
}
