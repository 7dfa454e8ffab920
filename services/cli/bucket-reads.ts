import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DirectReader } from "../nats/direct-reader.ts";
import { isJetStreamOff } from "../nats/jetstream-off.ts";
import { InboxRequests } from "../nats/inbox-requests.ts";

/** Direct gets on the worker's buckets, as the CLI checks a line before publishing it. */
export interface BucketReads {
  reader: DirectReader;
  close(): void;
}

/**
 * Direct gets on `streams` (KV buckets' streams), or undefined when one of them is not there (no
 * worker has run on these names: nothing to check), cannot be read (a permission: `onUnchecked`
 * is told why, and lines go unchecked) or does not allow direct gets. Throws when the server has
 * no JetStream.
 */
export async function openBucketReads(
  nc: NatsConnection,
  streams: readonly string[],
  onUnchecked: (reason: string) => void,
): Promise<BucketReads | undefined> {
  try {
    const jsm = await jetstreamManager(nc);
    for (const name of streams) {
      if (!(await jsm.streams.info(name)).config.allow_direct) return undefined;
    }
  } catch (err) {
    // No JetStream: the command cannot work at all, and says so once (withSession), not as a
    // check it skips.
    if (isJetStreamOff(err)) throw err;
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound))
      onUnchecked((err as Error).message);
    return undefined;
  }
  const requests = new InboxRequests(nc);
  return { reader: new DirectReader(requests), close: () => requests.close() };
}
