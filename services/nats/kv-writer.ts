import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KvEntry } from "@nats-io/kv";
import { headers, type Msg, type MsgHdrs } from "@nats-io/transport-node";
import type { InboxRequests } from "./inbox-requests.ts";

/** The KV operations the thread worker writes with (a nats.js `KV` has them too). */
export interface KvWrites {
  create(key: string, value: Uint8Array): Promise<number>;
  update(key: string, value: Uint8Array, revision: number): Promise<number>;
  put(key: string, value: Uint8Array): Promise<number>;
  get(key: string): Promise<KvEntry | null>;
}

/** The part of a nats.js `KV` a BucketWriter falls back on. */
type KvBase = Pick<KvWrites, "create" | "put" | "get">;

const decoder = new TextDecoder();
const EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence";
const MSG_ID = "Nats-Msg-Id";

/** A stored publish: its stream sequence, and whether the stream had it already (Msg-Id). */
export interface Stored {
  seq: number;
  duplicate: boolean;
}

/**
 * JetStream publishes (a KV create, update or put, a HISTORY node) answered on an inbox of their
 * own (InboxRequests: no Error built per request). Errors are the ones nats.js throws for the
 * same answers (JetStreamApiError with the server's code).
 */
export class KvWriter {
  readonly #requests: InboxRequests;

  constructor(requests: InboxRequests) {
    this.#requests = requests;
  }

  /**
   * Publishes `value` on `subject` if the subject's last stored sequence is `expected` (0: the
   * subject has none); resolves with the stored sequence (the KV revision).
   */
  write(subject: string, value: Uint8Array, expected: number | undefined): Promise<number> {
    return this.#requests.request(
      subject,
      value,
      expected === undefined ? undefined : writeHeaders(expected, undefined),
      "a write to",
      readSeq,
    );
  }

  /**
   * `write` with a `msgId` too (the stream's de-duplication within its window): resolves with the
   * sequence, and whether the stream had that id already (then nothing new was stored).
   */
  publish(
    subject: string,
    value: Uint8Array,
    options: { expected?: number | undefined; msgId?: string | undefined },
  ): Promise<Stored> {
    return this.#requests.request(
      subject,
      value,
      writeHeaders(options.expected, options.msgId),
      "a write to",
      readStored,
    );
  }
}

/** What nats.js's publish reads of a message's headers (MsgHdrsImpl has it; not public API). */
interface Encodable {
  encode(): Uint8Array;
}

/** This nats.js publishes headers by calling their `encode()`: checked once, at load. */
const ENCODES = typeof (headers() as unknown as Partial<Encodable>).encode === "function";

/**
 * A write's headers, encoded here as nats.js encodes `headers()` with the same values set (a
 * unit test compares the bytes). A publish only calls `encode()` on its headers, and building a
 * MsgHdrs (a Map, each name canonicalised and searched for) cost more garbage than the rest of
 * the request: ~45 MB a run of bench e2e heavy, three writes per message.
 */
export function writeHeaders(expected: number | undefined, msgId: string | undefined): MsgHdrs {
  // A create (every id claim: one per message from a thread's first cut): the same bytes each time.
  if (expected === 0 && msgId === undefined && ENCODES)
    return (createHeaders ??= build(0, undefined));
  return build(expected, msgId);
}

/** The headers of a create, built on first use. */
let createHeaders: MsgHdrs | undefined;

function build(expected: number | undefined, msgId: string | undefined): MsgHdrs {
  // A value with a line break is refused as nats.js refuses it (it throws); a client whose
  // publish reads headers otherwise gets them built its own way.
  if (!ENCODES || (msgId !== undefined && /[\r\n]/.test(msgId))) {
    const h = headers();
    if (expected !== undefined) h.set(EXPECTED_LAST_SUBJECT_SEQ, String(expected));
    if (msgId !== undefined) h.set(MSG_ID, msgId);
    return h;
  }
  let text = "NATS/1.0";
  if (expected !== undefined) text += `\r\n${EXPECTED_LAST_SUBJECT_SEQ}: ${expected}`;
  if (msgId !== undefined) text += `\r\n${MSG_ID}: ${msgId.trim()}`;
  // No header at all encodes to nothing, as nats.js's does.
  const bytes = encoder.encode(text === "NATS/1.0" ? "" : `${text}\r\n\r\n`);
  return new EncodedHeaders(bytes) as unknown as MsgHdrs;
}

/** Headers already encoded (a class: a closure per write costs a function and its name). */
class EncodedHeaders implements Encodable {
  readonly #bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }
  encode(): Uint8Array {
    return this.#bytes;
  }
}

const encoder = new TextEncoder();

/** The server's answer to a publish: what it stored, or the error nats.js would throw. */
function readStored(msg: Msg, subject: string): Stored {
  if (msg.headers?.hasError) {
    throw new Error(
      `JetStream did not store the write (${msg.headers.code} ${msg.headers.description}): no stream answered for ${subject}`,
    );
  }
  const answer = JSON.parse(decoder.decode(msg.data)) as {
    seq?: number;
    duplicate?: boolean;
    error?: { code: number; err_code: number; description: string };
  };
  if (answer.error) throw new JetStreamApiError(answer.error);
  if (typeof answer.seq !== "number") {
    throw new Error(`JetStream answered a write to ${subject} without a sequence`);
  }
  return { seq: answer.seq, duplicate: answer.duplicate === true };
}

const readSeq = (msg: Msg, subject: string): number => readStored(msg, subject).seq;

/** A fenced write found another revision (or none) where it expected its own. */
export function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/**
 * One bucket's writes through a KvWriter, with nats.js's semantics: `create` over a key whose
 * last entry is a delete marker succeeds (it retries through nats.js's `create`, which handles
 * that case), `update` is fenced on the revision. Reads go to the nats.js bucket.
 */
export class BucketWriter implements KvWrites {
  readonly #writer: KvWriter;
  readonly #kv: KvBase;
  readonly #subjectPrefix: string;

  constructor(writer: KvWriter, kv: KvBase, bucket: string) {
    this.#writer = writer;
    this.#kv = kv;
    this.#subjectPrefix = `$KV.${bucket}.`;
  }

  async create(key: string, value: Uint8Array): Promise<number> {
    try {
      return await this.#writer.write(this.#subjectPrefix + key, value, 0);
    } catch (err) {
      if (!isWrongLastSequence(err)) throw err;
    }
    return this.#kv.create(key, value);
  }

  update(key: string, value: Uint8Array, revision: number): Promise<number> {
    return this.#writer.write(this.#subjectPrefix + key, value, revision);
  }

  put(key: string, value: Uint8Array): Promise<number> {
    return this.#writer.write(this.#subjectPrefix + key, value, undefined);
  }

  get(key: string): Promise<KvEntry | null> {
    return this.#kv.get(key);
  }
}
