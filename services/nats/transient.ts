import { JetStreamApiError } from "@nats-io/jetstream";
import { RequestError } from "@nats-io/transport-node";

/** JetStream is off for the account or the server: a 503 that asking again does not fix. */
const JETSTREAM_OFF = new Set([10039, 10076]);

/**
 * What a JetStream request meets for a few seconds while a cluster elects a leader or a server
 * rejoins: no answer in time (a stream without a leader drops requests), a request error, or
 * JetStream's 503 "temporarily unavailable". Asking again may succeed; a stream that is not there
 * or JetStream switched off will not.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return err.status === 503 && !JETSTREAM_OFF.has(err.code);
  if (err instanceof RequestError) return !err.isNoResponders();
  return err instanceof Error && (err.name === "TimeoutError" || err.name === "NoRespondersError");
}

/**
 * `isTransient`, and also what a server rejoining its cluster answers for a while: any 503 (its
 * JetStream not on yet) and any request error (no leader to answer yet). For reads that wait
 * out a rejoin for a bounded time (`addConsumerOnLeader`), where failing later costs only time.
 */
export function isTransientWhileRejoining(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return err.status === 503;
  if (err instanceof RequestError) return true;
  return isTransient(err);
}
