import type { NatsConnection } from "@nats-io/transport-node";

/** The parts of nats.js's protocol handler this reaches into (not public API: checked at run). */
interface Protocol {
  flushPending(): void;
  outbound: { size(): number };
  pendingLimit: number;
  close(err?: Error): Promise<void>;
}

/** Protocol handlers already coalescing. */
const coalesced = new WeakSet<object>();

/**
 * Makes the connection write what it has to send once per turn of the event loop (in the check
 * phase, setImmediate) instead of at the end of each microtask drain. nats.js flushes its
 * outbound buffer in a microtask queued by the first command after a flush, so a worker whose
 * async chains each publish after an await wrote to the socket many times per turn: socket
 * writes were the worker's largest single cost in bench e2e heavy. Order is kept (one buffer);
 * a buffer past the client's own threshold, or before a close, is still written at once. Returns
 * false, changing nothing, when the client's internals are not the ones this knows.
 */
export function coalesceWrites(nc: NatsConnection): boolean {
  const protocol = (nc as unknown as { protocol?: Partial<Protocol> }).protocol;
  const flushPending = protocol?.flushPending;
  const close = protocol?.close;
  const outbound = protocol?.outbound;
  if (
    !protocol ||
    typeof flushPending !== "function" ||
    typeof close !== "function" ||
    typeof outbound?.size !== "function"
  ) {
    return false;
  }
  // Once per connection (two workers on one connection, in tests): a second wrap would defer the
  // flushes the first makes at once.
  if (coalesced.has(protocol)) return true;
  coalesced.add(protocol);
  const flushNow = flushPending.bind(protocol);
  // A close in the same turn as the last publishes (acks, say) writes them first, as before.
  protocol.close = (err?: Error) => {
    flushNow();
    return close.call(protocol, err);
  };
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
