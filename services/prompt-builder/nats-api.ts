import {
  headers,
  type MsgHdrs,
  PermissionViolationError,
  type Msg,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { ApiError, errorBody } from "../api/api-error.ts";
import type { ApiMetrics } from "./metrics.ts";
import type { Operations } from "./operations.ts";
import type { RawRequest } from "../api/requests.ts";

/** The operations served over NATS request/reply, each on `<apiPrefix>.<op>`. */
export const NATS_OPERATIONS = ["prompt", "zoom", "outline", "tools"] as const;

/** Bodies are a handful of arguments; anything near NATS' 1 MB payload is a mistake. */
const MAX_REQUEST = 64 * 1024;

/** Instances share requests through one queue group, so adding one adds capacity. */
export const QUEUE_GROUP = "outline-prompt-builder";

export interface NatsApi {
  /** One per operation: main.ts checks the server took them (confirmSubscriptions). */
  subscriptions: readonly Subscription[];
  /** Stops taking requests and finishes those in flight. */
  drain(): Promise<void>;
}

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

/**
 * Serves `<apiPrefix>.prompt|zoom|outline|tools` with JSON bodies holding the same arguments as
 * the HTTP query (plus `thread`). A reply is the same JSON as over HTTP; an error is
 * `{ error: { code, message } }` with the HTTP status in the `Outline-Status` header.
 */
export function serveNatsApi(
  nc: NatsConnection,
  apiPrefix: string,
  operations: Operations,
  metrics: ApiMetrics,
  log: (line: string) => void = (line) => console.error(line),
): NatsApi {
  const subs: Subscription[] = [];
  const inflight = new Set<Promise<void>>();

  async function answer(op: (typeof NATS_OPERATIONS)[number], msg: Msg): Promise<void> {
    const started = performance.now();
    let status = 200;
    let retryAfter: number | undefined;
    let body: unknown;
    try {
      const raw = parseBody(msg);
      body = await (op === "prompt" ? operations.promptBody(raw) : operations[op](raw));
    } catch (err) {
      const apiError =
        err instanceof ApiError
          ? err
          : new ApiError(
              500,
              "INTERNAL",
              `the prompt-builder failed: ${(err as Error).message}; see its log`,
            );
      if (!(err instanceof ApiError))
        log(`prompt-builder: NATS ${op} failed: ${(err as Error).stack ?? String(err)}`);
      status = apiError.status;
      retryAfter = apiError.retryAfter;
      body = errorBody(apiError);
    }
    metrics.observe(op, "nats", status, (performance.now() - started) / 1000);
    if (!msg.reply) return;
    msg.respond(
      body instanceof Uint8Array ? body : JSON.stringify(body),
      statusHeaders(status, retryAfter),
    );
  }

  for (const op of NATS_OPERATIONS) {
    subs.push(
      nc.subscribe(`${apiPrefix}.${op}`, {
        queue: QUEUE_GROUP,
        // Each request is answered on its own; a slow one must not hold up the next.
        callback: (err, msg) => {
          if (err) {
            // A refusal closes it, and is said once by main.ts (confirm/watchSubscriptions).
            if (!(err instanceof PermissionViolationError))
              log(`prompt-builder: subscription ${apiPrefix}.${op} failed: ${err.message}`);
            return;
          }
          const done = answer(op, msg).finally(() => inflight.delete(done));
          inflight.add(done);
        },
      }),
    );
  }

  return {
    subscriptions: subs,
    async drain() {
      // One the server refused is closed already: draining it would throw.
      await Promise.all(subs.filter((s) => !s.isClosed()).map((s) => s.drain()));
      await Promise.allSettled([...inflight]);
    },
  };
}
