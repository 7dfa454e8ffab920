import { JetStreamApiCodes } from "@nats-io/jetstream";
import type { Msg } from "@nats-io/transport-node";
import type { InboxRequests } from "./inbox-requests.ts";

/** A key's last entry in a KV bucket, as nats.js's `KvEntry` gives the fields a reader uses. */
export interface KvRead {
  operation: "PUT" | "DEL" | "PURGE";
  value: Uint8Array;
  revision: number;
}

/** `$JS.API.STREAM.MSG.GET`'s answer (the message's headers and data in base64). */
interface MsgGetAnswer {
  message?: { seq: number; hdrs?: string; data?: string };
  error?: { code: number; err_code?: number; description?: string };
}

const decoder = new TextDecoder();
/** The header a KV delete or purge leaves on the key's last message (a put has none). */
export const KV_OPERATION = "KV-Operation";
const OPERATION = new RegExp(`\\r\\n${KV_OPERATION}:\\s*(DEL|PURGE)\\s*\\r\\n`, "i");

/**
 * Reads a KV key's last entry through its stream's leader (a message get, not a direct get,
 * which any replica answers: a thread's new owner must read its old owner's last save) on the
 * worker's inbox. nats.js's `kv.get` on a bucket opened without direct gets goes through its
 * request path, which builds a timer and an Error with a stack trace per request, and another
 * Error for a key never written: that was most of a new thread's load (bench e2e young).
 */
export class KvLeaderReader {
  readonly #requests: InboxRequests;

  constructor(requests: InboxRequests) {
    this.#requests = requests;
  }

  /** `key`'s last entry in `bucket` (a delete or purge marker included); null when none. */
  get(bucket: string, key: string): Promise<KvRead | null> {
    return this.#requests.request(
      `$JS.API.STREAM.MSG.GET.KV_${bucket}`,
      `{"last_by_subj":"$KV.${bucket}.${key}"}`,
      undefined,
      "a read of",
      readAnswer,
    );
  }
}

function readAnswer(msg: Msg, subject: string): KvRead | null {
  const answer = JSON.parse(decoder.decode(msg.data)) as MsgGetAnswer;
  if (answer.error) {
    // The key holds no message; a stream not found (also a 404) is an error, as for nats.js.
    if (answer.error.err_code === JetStreamApiCodes.NoMessageFound) return null;
    throw new Error(
      `${subject} answered ${answer.error.code} ${answer.error.description ?? ""} (err_code ${answer.error.err_code ?? "?"})`,
    );
  }
  const message = answer.message;
  if (!message) throw new Error(`${subject} answered neither a message nor an error`);
  const headers = message.hdrs ? Buffer.from(message.hdrs, "base64").toString("latin1") : "";
  const marker = OPERATION.exec(headers)?.[1]?.toUpperCase() as "DEL" | "PURGE" | undefined;
  return {
    operation: marker ?? "PUT",
    value: Buffer.from(message.data ?? "", "base64"),
    revision: message.seq,
  };
}
