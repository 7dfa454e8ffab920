// The API over NATS request/reply, as the prompt-builder, search and the cluster view serve it: a
// request is a JSON body holding the operation's arguments; a reply carries the HTTP status the
// same request would have had in headers.
import { headers, type Msg, type MsgHdrs } from "@nats-io/transport-node";
import { ApiError } from "./api-error.ts";
import type { RawRequest } from "./requests.ts";

/** Bodies are a handful of arguments; anything near NATS' 1 MB payload is a mistake. */
const MAX_REQUEST = 64 * 1024;

/**
 * A reply's headers: `Outline-Status`, the HTTP status the same request would have had, and
 * `Retry-After` (seconds) when asking again later may succeed, as HTTP sends it.
 */
export function statusHeaders(status: number, retryAfter?: number): { headers: MsgHdrs } {
  const h = headers();
  h.set("Outline-Status", String(status));
  if (retryAfter !== undefined) h.set("Retry-After", String(retryAfter));
  return { headers: h };
}

/** A request's JSON body as the arguments of an operation. */
export function parseBody(msg: Msg): RawRequest {
  if (msg.data.length > MAX_REQUEST) {
    throw new ApiError(
      413,
      "BODY_TOO_LARGE",
      `the request is ${msg.data.length} bytes; at most ${MAX_REQUEST} are read`,
    );
  }
  if (msg.data.length === 0) return {};
  let body: unknown;
  try {
    body = msg.json();
  } catch (err) {
    throw new ApiError(
      400,
      "BAD_JSON",
      `the request body is not JSON (${(err as Error).message}); send e.g. {"thread":"t1","agent":"north"}`,
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(
      400,
      "BAD_JSON",
      `the request body must be a JSON object, e.g. {"thread":"t1","id":8,"n":4}`,
    );
  }
  return body as RawRequest;
}
