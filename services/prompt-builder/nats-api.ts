import {
  PermissionViolationError,
  type Msg,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { ApiError, errorBody } from "../api/api-error.ts";
import type { ApiMetrics } from "./metrics.ts";
import type { Operations } from "../api/operations-interface.ts";
import { parseBody, statusHeaders } from "../api/nats-wire.ts";

/** The operations served over NATS request/reply, each on `<apiPrefix>.<op>`. */
export const NATS_OPERATIONS = ["prompt", "zoom", "outline", "tools"] as const;

/** Instances share requests through one queue group, so adding one adds capacity. */
export const QUEUE_GROUP = "outline-prompt-builder";

export interface NatsApi {
  /** One per operation: main.ts checks the server took them (confirmSubscriptions). */
  subscriptions: readonly Subscription[];
  /** Stops taking requests and finishes those in flight. */
  drain(): Promise<void>;
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
