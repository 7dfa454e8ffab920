import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { sleep } from "../util/wait.ts";
import { isTransientWhileRejoining } from "./transient.ts";

/**
 * Consumers made and dropped before one lands on the leader: each does 1 in 3 on R3, so a read
 * gives up with (2/3)^64 ≈ 5e-12. At 20 ((2/3)^20 = 3e-4) the cluster test, which reads hundreds
 * of threads, gave up now and then with the leader healthy.
 */
const MAX_PLACEMENTS = 64;
/** How long a request that timed out or found no leader is asked again (a server rejoining). */
const RETRY_FOR_MS = 30_000;

/**
 * A consumer one read uses and drops: no acks, in memory, on one server, gone a minute after its
 * reader stops asking (a crashed reader leaves nothing). `config` adds where it starts and what
 * it filters, and may override these.
 */
const READ_CONSUMER: Partial<ConsumerConfig> = {
  ack_policy: AckPolicy.None,
  mem_storage: true,
  num_replicas: 1,
  inactive_threshold: nanos(60_000),
};

/** No consumer landed on the stream's leader; a read elsewhere could miss messages. */
export class ConsumerPlacementError extends Error {
  override readonly name = "ConsumerPlacementError";
  readonly code = "CONSUMER_NOT_ON_LEADER";
}

/**
 * Makes a consumer for a read (READ_CONSUMER with `config`) and keeps it only once it is placed
 * on the stream's leader. The server places an R1 consumer on any replica of a clustered stream, and it reads that
 * replica's copy: one a restarted server is still catching up serves a read with messages
 * missing, for a while after the stream already calls it current (docs/scale-out.md). The
 * leader holds every message it acknowledged. On one server the first consumer is kept.
 */
export async function addConsumerOnLeader(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig>,
  retryForMs = RETRY_FOR_MS,
): Promise<ConsumerInfo> {
  const until = Date.now() + retryForMs;
  const elsewhere: string[] = [];
  for (let placed = 0; placed < MAX_PLACEMENTS;) {
    let info: ConsumerInfo | undefined;
    let leader: string | undefined;
    try {
      info = await jsm.consumers.add(stream, { ...READ_CONSUMER, ...config });
      // One server names no host: nothing to place, and no stream info to ask for.
      if (info.cluster?.leader === undefined) return info;
      // Asked each time: a consumer off the leader may mean the leader moved.
      leader = (await jsm.streams.info(stream)).cluster?.leader;
    } catch (err) {
      if (info) await jsm.consumers.delete(stream, info.name).catch(() => false);
      if (!isTransientWhileRejoining(err) || Date.now() >= until) throw err;
      await sleep(250);
      continue;
    }
    const host = info.cluster.leader;
    if (leader === undefined || host === leader) return info;
    placed += 1;
    elsewhere.push(host);
    await jsm.consumers.delete(stream, info.name).catch(() => false);
  }
  throw new ConsumerPlacementError(
    `stream ${stream}: ${MAX_PLACEMENTS} consumers in a row were placed off its leader (on ${[...new Set(elsewhere)].join(", ")}), whose copy may lack messages; rerun, and check \`nats stream info ${stream}\` for a leader`,
  );
}
