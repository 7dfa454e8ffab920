import { PermissionViolationError, type Msg, type MsgHdrs } from "@nats-io/transport-node";
import type { InboxRequests } from "./inbox-requests.ts";

/** A message read by a direct get: where it is stored, its bytes and its headers. */
export interface DirectMessage {
  seq: number;
  subject: string;
  data: Uint8Array;
  /** The stored message's own headers (KV-Operation, Nats-Msg-Id, …) beside the get's. */
  headers: MsgHdrs | undefined;
}

/** What a direct get asks for: a sequence, the last on a subject, or the next on one from a sequence. */
export type DirectQuery =
  { seq: number } | { last_by_subj: string } | { next_by_subj: string; seq: number };

const NOT_FOUND = 404;

/**
 * Direct gets (`$JS.API.DIRECT.GET.<stream>`, the stream must allow them) answered on an inbox of
 * their own (InboxRequests: no Error built per request, as nats.js's `direct.getMessage` does).
 * The worker reads a summary node before each summarizer call through it; the prompt-builder
 * every read of a request.
 */
export class DirectReader {
  readonly #requests: InboxRequests;

  constructor(requests: InboxRequests) {
    this.#requests = requests;
  }

  /** The message `query` names in `stream`, or undefined when there is none. */
  async get(stream: string, query: DirectQuery): Promise<DirectMessage | undefined> {
    try {
      return await this.#requests.request(
        `$JS.API.DIRECT.GET.${stream}`,
        JSON.stringify(query),
        undefined,
        "a direct get on",
        readDirect,
      );
    } catch (err) {
      // No stream of that name (or one not allowing direct gets) answers nothing at all; a
      // permission the user lacks is refused at once, and is what to fix.
      const refused = (err as Error).cause instanceof PermissionViolationError;
      throw new Error(
        `direct get of ${describe(query)} from stream ${stream} failed: ${(err as Error).message}; ${refused ? `the NATS user may not read stream ${stream}` : "check that the stream exists and allows direct gets"}`,
        { cause: err },
      );
    }
  }

  /** The last message stored on `subject` in `stream`, or undefined when there is none. */
  lastBySubject(stream: string, subject: string): Promise<DirectMessage | undefined> {
    return this.get(stream, { last_by_subj: subject });
  }
}

function describe(query: DirectQuery): string {
  if ("last_by_subj" in query) return `the last message on ${query.last_by_subj}`;
  if ("next_by_subj" in query) {
    return `the first message on ${query.next_by_subj} from seq ${query.seq}`;
  }
  return `message seq ${query.seq}`;
}

function readDirect(msg: Msg): DirectMessage | undefined {
  const h = msg.headers;
  if (h?.hasError) {
    if (h.code === NOT_FOUND) return undefined;
    throw new Error(`the server answered ${h.code} ${h.description}`);
  }
  const seq = Number(h?.get("Nats-Sequence"));
  const stored = h?.get("Nats-Subject");
  if (!Number.isInteger(seq) || seq <= 0 || !stored) {
    throw new Error("the answer has no sequence and subject: not a direct get reply");
  }
  return { seq, subject: stored, data: msg.data, headers: h };
}
