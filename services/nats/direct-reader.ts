import type { Msg } from "@nats-io/transport-node";
import type { InboxRequests } from "./inbox-requests.ts";

/** A message read by a direct get: where it is stored, and its bytes. */
export interface DirectMessage {
  seq: number;
  subject: string;
  data: Uint8Array;
}

const NOT_FOUND = 404;

/**
 * Direct gets (`$JS.API.DIRECT.GET.<stream>`, the stream must allow them) answered on an inbox of
 * their own (InboxRequests: no Error built per request, as nats.js's `direct.getMessage` does).
 * The worker reads a summary node before each summarizer call through it.
 */
export class DirectReader {
  readonly #requests: InboxRequests;

  constructor(requests: InboxRequests) {
    this.#requests = requests;
  }

  /** The last message stored on `subject` in `stream`, or undefined when there is none. */
  async lastBySubject(stream: string, subject: string): Promise<DirectMessage | undefined> {
    const what = `direct get of the last message on ${subject} from stream ${stream}`;
    try {
      return await this.#requests.request(
        `$JS.API.DIRECT.GET.${stream}`,
        JSON.stringify({ last_by_subj: subject }),
        undefined,
        "a direct get on",
        readDirect,
      );
    } catch (err) {
      // No stream of that name (or one not allowing direct gets) answers nothing at all.
      throw new Error(
        `${what} failed: ${(err as Error).message}; check that the stream exists and allows direct gets`,
        { cause: err },
      );
    }
  }
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
  return { seq, subject: stored, data: msg.data };
}
