import { jetstream, jetstreamManager, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { threadSettingsText } from "../../shared/settings.ts";
import type { InfraNames } from "../config/names.ts";
import { startupStep } from "../nats/startup-step.ts";
import type { Subjects } from "../nats/subjects.ts";
import { isTransient } from "../nats/transient.ts";
import { joinCluster, type Membership } from "../cluster/membership.ts";
import { errorText, type Logger } from "./log.ts";
import { PartitionConsumers, UNPARTITIONED } from "./partitions.ts";
import type { ThreadRegistry } from "./registry.ts";
import { retryInPlace } from "./retry.ts";
import type { WorkerContext } from "./worker-context.ts";

/** Events stored before the mapping are read by the holder of partition 0. */
const withUnpartitioned = (ks: number[]) => (ks.includes(0) ? [UNPARTITIONED, ...ks] : ks);

export interface HeldPartitions {
  readonly membership: Membership;
  /** Gives every lease up at once (each partition drains first), so the others take them. */
  leave(): Promise<void>;
  /** Crash simulation: leases and consumers dropped, nothing drained. */
  abandon(): void;
}

/**
 * Partitioned mode (docs/scale-out.md): this member joins the cluster and holds the partitions
 * its leases give it, each with its own consumer. Threads with work outstanding in a partition
 * taken are woken; a partition given up drains its threads first.
 */
export async function holdPartitions(parts: {
  nc: NatsConnection;
  js: JetStreamClient;
  names: InfraNames;
  s: Subjects;
  partitions: number;
  ctx: WorkerContext;
  registry: ThreadRegistry;
  route: (msg: JsMsg) => void;
  ackWaitMs: number;
  maxAckPending: number;
  replicas: number;
  failoverMs: number | undefined;
  capacity: number | undefined;
  log: Logger;
  /** Aborted once the worker stops: a consumer failing then is not worth a log line. */
  stopping: AbortSignal;
}): Promise<HeldPartitions> {
  const { nc, names, s, ctx, registry, log } = parts;
  // Consumers and leases are Raft writes on a cluster: slower than a publish under load.
  const slowJsm = await startupStep(
    "reading the JetStream account",
    () => jetstreamManager(nc, { timeout: 20_000 }),
    { log: (line) => log.warn(line), transient: isTransient },
  );
  const handing = new AbortController();
  const consumers = new PartitionConsumers(parts.js, slowJsm, names, s, {
    ackWaitMs: parts.ackWaitMs,
    maxAckPending: parts.maxAckPending,
    route: parts.route,
    failed: (k, err) => {
      if (!parts.stopping.aborted)
        log.error(`consuming partition ${k} of ${names.chatStream} stopped: ${errorText(err)}`);
    },
    forget: (consumer) => ctx.deliveries.forget(consumer),
  });
  const inPartitions = (ks: readonly number[]) => {
    const set = new Set(ks);
    return (thread: string) => set.has(s.partitionOf(thread) ?? -2);
  };
  // A slot that gives up a thread of a partition still held loads it again: soon after a lost
  // fence (the winner's write is stored), after the ack wait after a failure (as its events would).
  registry.reloadOwned(
    (thread) => consumers.holds(s.partitionOf(thread) ?? -2),
    1_000,
    parts.ackWaitMs,
  );
  let lastLag = 0;
  const listBusy = (ks: readonly number[]) => {
    const listing = retryInPlace(() => ctx.busy.list(), {
      what: `list the busy threads of partitions ${ks.join(",")}`,
      log: ctx.retries,
      signal: handing.signal,
    });
    listing.catch(() => undefined);
    return listing;
  };
  let busyAhead: Promise<string[]> | undefined;
  const membership = await joinCluster({
    js: jetstream(nc, { timeout: 20_000 }),
    names,
    partitions: parts.partitions,
    replicas: parts.replicas,
    ...(parts.failoverMs === undefined ? {} : { failoverMs: parts.failoverMs }),
    ...(parts.capacity === undefined ? {} : { capacity: parts.capacity }),
    log,
    stats: () => ({ threads: registry.size, lag: lastLag }),
    settings: threadSettingsText(ctx.settings),
    // The consumers and the busy threads are read while the leases are written: taking one
    // then only creates. Planned after the last holder's lease went (it drained first, or died),
    // so the list holds every thread it left with work outstanding.
    prepare: (ks) => {
      for (const k of withUnpartitioned(ks)) consumers.prepare(k);
      busyAhead = listBusy(ks);
    },
    acquire: async (ks) => {
      const opening = withUnpartitioned(ks);
      const listing = busyAhead ?? listBusy(ks);
      busyAhead = undefined;
      // A lease held must be read: opening is retried until it works or the worker stops.
      await Promise.all(
        opening.map((k) =>
          retryInPlace(() => consumers.open(k), {
            what: `open the consumer of partition ${k}`,
            log: ctx.retries,
            signal: handing.signal,
          }),
        ),
      );
      // Threads drained with work outstanding get no event: woken here, or never.
      const busy = await listing;
      const woken = busy.filter(inPartitions(ks));
      if (woken.length > 0)
        log.info(`waking ${woken.length} thread(s) with work outstanding in ${ks.join(",")}`);
      for (const thread of woken) registry.wake(thread);
    },
    release: async (ks) => {
      const closing = withUnpartitioned(ks);
      await Promise.all(closing.map((k) => consumers.close(k)));
      await registry.drainWhere(inPartitions(ks));
    },
  });
  // The heartbeat reports the lag: refreshed on a timer, since a heartbeat does not wait. A held
  // partition whose consumer stopped delivering is re-created (after STALL_MS with events
  // pending and none delivered).
  const lagTimer = setInterval(() => {
    consumers
      .lag()
      .then(({ pending }) => (lastLag = pending))
      .catch(() => undefined)
      .finally(() => {
        for (const k of consumers.stalled(parts.ackWaitMs)) {
          log.warn(`the consumer of partition ${k} delivers nothing: re-creating it`);
          const retry = (open: () => Promise<void>) =>
            retryInPlace(open, {
              what: `re-create the consumer of partition ${k}`,
              log: ctx.retries,
              signal: handing.signal,
            });
          consumers.recreate(k, retry).catch((err: unknown) => {
            if (!parts.stopping.aborted)
              log.error(`could not re-create the consumer of partition ${k}: ${errorText(err)}`);
          });
        }
      });
  }, 2_000);
  lagTimer.unref();
  return {
    membership,
    async leave() {
      clearInterval(lagTimer);
      handing.abort();
      await membership.leave();
    },
    abandon() {
      clearInterval(lagTimer);
      membership.abandon();
      consumers.stopAll();
    },
  };
}
