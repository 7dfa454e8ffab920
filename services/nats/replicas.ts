import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";

/**
 * The replicas of a clustered stream still catching up with its leader, as "name (N behind)"
 * (none: all current, or one server). An offline replica is left out: no consumer is placed
 * on it, and a server down for good must not stop every read.
 */
export function laggingReplicas(info: StreamInfo): string[] {
  return (info.cluster?.replicas ?? [])
    .filter((r) => !r.offline && (!r.current || r.lag > 0))
    .map((r) => `${r.name} (${r.lag} behind)`);
}

/** A restarted server catches its replica up in seconds; one still behind after this fails. */
const REPLICAS_CURRENT_WITHIN_MS = 30_000;

/** The replicas of a stream did not catch up in time; a read through a consumer could miss messages. */
export class ReplicasBehindError extends Error {
  override readonly name = "ReplicasBehindError";
  readonly code = "REPLICAS_BEHIND";
}

/**
 * Waits until no replica of `stream` lags its leader. A consumer reads one replica's copy,
 * chosen by the server, and a replica a restarted server is still catching up would serve a
 * read with messages missing. A stream info that fails (a leader election) does not wait: the
 * consumer's own request then fails or finds a leader, as it would have.
 */
export async function waitForCurrentReplicas(
  jsm: JetStreamManager,
  stream: string,
  withinMs = REPLICAS_CURRENT_WITHIN_MS,
  pollMs = 100,
): Promise<void> {
  const until = Date.now() + withinMs;
  for (;;) {
    const info = await jsm.streams.info(stream).catch(() => undefined);
    const lagging = info === undefined ? [] : laggingReplicas(info);
    if (lagging.length === 0) return;
    if (Date.now() >= until) {
      throw new ReplicasBehindError(
        `stream ${stream}: replica ${lagging.join(", ")} still catching up after ${withinMs / 1000} s, so a read now could miss messages; rerun once \`nats stream info ${stream}\` shows every replica current`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
