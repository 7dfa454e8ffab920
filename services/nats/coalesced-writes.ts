import type { NatsConnection } from "@nats-io/transport-node";

/** The parts of nats.js's protocol handler this reaches into (not public API: checked at run). */
interface Protocol {
  flushPending(): void;
  outbound: { size(): number };
  pendingLimit: number;
}

/**
 * Makes the connection write what it has to send once per turn of the event loop (in the check
 * phase, setImmediate) instead of at the end of each microtask drain. nats.js flushes its
 * outbound buffer in a microtask queued by the first command after a flush, so a worker whose
 * async chains each publish after an await wrote to the socket many times per turn: socket
 * writes were the worker's largest single cost in bench e2e heavy. Order is kept (one buffer);
 * a buffer past the client's own threshold is still written at once. Returns false, changing
 * nothing, when the client's internals are not the ones this knows.
 */
export function coalesceWrites(nc: NatsConnection): boolean {
  const protocol = (nc as unknown as { protocol?: Partial<Protocol> }).protocol;
  const flushPending = protocol?.flushPending;
  const outbound = protocol?.outbound;
  if (!protocol || typeof flushPending !== "function" || typeof outbound?.size !== "function") {
    return false;
  }
  const flushNow = flushPending.bind(protocol);
  const limit = () => protocol.pendingLimit ?? 32 * 1024;
  let scheduled = false;
  const flushScheduled = () => {
    scheduled = false;
    flushNow();
  };
  protocol.flushPending = () => {
    if (outbound.size() >= limit()) {
      flushNow();
      return;
    }
    if (scheduled) return;
    scheduled = true;
    setImmediate(flushScheduled);
  };
  return true;
}
