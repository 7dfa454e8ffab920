import { jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { InspectionEvent } from "xstate";
import type { CoreSettings } from "../../shared/settings.ts";
import type { InfraNames } from "../config/names.ts";
import { coalesceWrites } from "../nats/coalesced-writes.ts";
import { publishDeadLetter } from "../nats/dead-letter.ts";
import { purgeBySubjectIsSafe } from "../nats/erase.ts";
import { DirectReader } from "../nats/direct-reader.ts";
import { KvLeaderReader } from "../nats/kv-leader-reader.ts";
import { InboxRequests } from "../nats/inbox-requests.ts";
import { BucketWriter, KvWriter } from "../nats/kv-writer.ts";
import { startupStep } from "../nats/startup-step.ts";
import { isTransient } from "../nats/transient.ts";
import { subjects } from "../nats/subjects.ts";
import type { MeteredSummarizer } from "../summarizer/index.ts";
import { startActorFeed } from "./actor-feed.ts";
import { ensureWorkerBuckets, type WorkerBuckets } from "../nats/buckets.ts";
import { BusyIndex } from "./busy-index.ts";
import { chatSubjectProblem } from "../nats/decode.ts";
import { DeliveryLedger } from "./delivery-ledger.ts";
import { historyNodes } from "./history-nodes.ts";
import { Limiter } from "./limiter.ts";
import { consoleLogger, errorText, type Logger } from "./log.ts";
import { METRIC, workerMetrics, type MetricRegistry } from "./metrics.ts";
import { serveMetrics } from "./metrics-endpoint.ts";
import { Refusals } from "./refusals.ts";
import { OutlineFloor } from "./outline-floor.ts";
import { ThreadRegistry } from "./registry.ts";
import { retryInPlace } from "./retry.ts";
import { RetryLog } from "./retry-log.ts";
import { NextTurn } from "./next-turn.ts";
import { DEFAULT_JOB_TIMING, type JobTiming } from "./summary-jobs.ts";
import { DEFAULT_FAILOVER_MS } from "../cluster/failover.ts";
import type { Membership } from "../cluster/membership.ts";
import { watchSinglePeers, type SinglePeers } from "./single-peers.ts";
import { holdPartitions } from "./held-partitions.ts";
import { consumeSingle, refuseBesideMembers } from "./single-consumer.ts";
import type { WorkerContext } from "./worker-context.ts";

export interface ThreadWorkerOptions {
  nc: NatsConnection;
  names: InfraNames;
  settings: CoreSettings;
  summarizer: MeteredSummarizer;
  log?: Logger;
  /** Copies per bucket when the worker creates its buckets. */
  replicas?: number;
  /** An actor idle this long is persisted and stopped (OUTLINE_IDLE_MS). */
  idleMs?: number;
  /**
   * Thread actors in memory at most (OUTLINE_MAX_ACTORS); past it the least recently used at
   * rest is passivated. Infinity: no cap. Default DEFAULT_MAX_ACTORS.
   */
  maxActors?: number;
  /** Shortest time between two snapshot writes of one thread. */
  snapshotDelayMs?: number;
  /** Longest a state changed only by summaries waits before it is saved (nothing waits on it). */
  saveDelayMs?: number;
  /**
   * Longest chat events applied to a thread wait for more before one save stores them all and
   * they are acknowledged; 0 saves after every burst. Under the ack wait by far.
   */
  saveLingerMs?: number;
  /** Consumer ack wait, used when the worker creates the durable (OUTLINE_ACK_WAIT_MS). */
  ackWaitMs?: number;
  /** Events delivered and not yet acknowledged, at most, over all threads. */
  maxAckPending?: number;
  /**
   * Delivered events held unacknowledged from which chat events wait only half the save linger,
   * and less the more are held (the worker is crowded), so the consumer does not reach its
   * max_ack_pending and stop delivering while they linger; default nine tenths of the
   * consumer's max_ack_pending.
   */
  saveAtHeld?: number;
  /** Most events of one thread applied before one state write. */
  maxBurst?: number;
  /**
   * Skip a slot's CHAT gap read when this worker provably saw every delivery since the thread's
   * cursor (DeliveryLedger). On by default; false reads CHAT before every event that does not
   * directly follow the thread's previous one.
   */
  skipGapReads?: boolean;
  /** Whole messages a thread holds at most while summaries lag (backpressure); default 4,000. */
  backlogLimit?: number;
  jobTiming?: Partial<JobTiming>;
  /** Observes every thread actor (XState inspection events), e.g. for `--inspect`. */
  inspect?: (event: InspectionEvent) => void;
  /**
   * Partitioned mode (`names.partitions` set): a member unheard of for this long is dead and its
   * partitions move (OUTLINE_FAILOVER_MS, default 3,000).
   */
  failoverMs?: number;
  /** Partitioned mode: this member's share of the partitions (OUTLINE_CAPACITY, default 1). */
  capacity?: number;
  /**
   * Single mode: heartbeat in the cluster bucket and watch for other single-mode workers on the
   * same stream (`single-peers.ts`); `refuse` stops this one when it came second. Unset: no
   * heartbeat (workers of one process, as tests run them).
   */
  singlePeers?: "refuse" | "allow";
}

export interface ThreadWorker {
  readonly registry: ThreadRegistry;
  /** Partitioned mode: this member of the cluster (docs/scale-out.md); undefined in single mode. */
  readonly membership: Membership | undefined;
  readonly metrics: MetricRegistry;
  readonly buckets: WorkerBuckets;
  /** The Prometheus text the metrics subject answers with. */
  renderMetrics(): Promise<string>;
  /** Stops pulling, applies what was delivered, writes every state and snapshot. */
  stop(): Promise<void>;
  /** Crash simulation: stops at once, writes and acknowledges nothing more. */
  abandon(): void;
}

export const DEFAULT_IDLE_MS = 60_000;
/**
 * Live thread actors at most (OUTLINE_MAX_ACTORS). Under load an actor holds some 100 KB of RSS
 * with its share of the heap's slack: 100,000 threads busy at once then peak under 1 GB, where
 * 10,000 passed it (docs/thread-worker.md, `npm run bench -- threads`).
 */
export const DEFAULT_MAX_ACTORS = 5_000;
/** Whole messages a thread holds at most while its summaries lag (OUTLINE_BACKLOG_LIMIT). */
export const DEFAULT_BACKLOG_LIMIT = 4_000;
export const DEFAULT_ACK_WAIT_MS = 30_000;
/** Longest applied chat events wait for more before their state is saved and they are acked. */
export const DEFAULT_SAVE_LINGER_MS = 500;
/** No delivery for this long, with none waiting in the consumer: lingering saves are done now. */
const CAUGHT_UP_MS = 20;

/**
 * Starts consuming CHAT with the shared durable consumer: each event goes to its thread's actor,
 * created on demand and rehydrated from its persisted state. Call after ensureTopology.
 */
export async function startThreadWorker(options: ThreadWorkerOptions): Promise<ThreadWorker> {
  const { nc, names } = options;
  const log = options.log ?? consoleLogger();
  const ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS;
  // By default at most a tenth of the ack wait, so a short ack wait (tests) keeps its margin.
  const saveLingerMs = options.saveLingerMs ?? Math.min(DEFAULT_SAVE_LINGER_MS, ackWaitMs / 10);
  if (!Number.isFinite(saveLingerMs) || saveLingerMs < 0 || saveLingerMs > ackWaitMs / 10) {
    throw new Error(
      `saveLingerMs ${saveLingerMs} is not between 0 and a tenth of the ack wait (${ackWaitMs} ms): events waiting for their save must be acknowledged long before the server redelivers them`,
    );
  }
  // A few requests per event and per summary node: written to the socket once per turn.
  coalesceWrites(nc);
  const js = jetstream(nc);
  const retrying = (line: string) => log.warn(line);
  const jsm = await startupStep("reading the JetStream account", () => jetstreamManager(nc), {
    log: retrying,
    transient: isTransient,
  });
  const s = subjects(names);
  const buckets = await ensureWorkerBuckets(js, jsm, names, options.replicas ?? 1, retrying);
  // Before the first event: an instance joining under load would pay its summarizer's start
  // (0.3 s of CPU for a thread, at load 11) inside its first deliveries' work.
  await options.summarizer.start?.();
  const metrics = workerMetrics();
  // One inbox for the worker's JetStream writes and node reads (no nats.js request per call).
  const inbox = new InboxRequests(nc);
  const writer = new KvWriter(inbox);
  const direct = new DirectReader(inbox);
  const jobTiming = { ...DEFAULT_JOB_TIMING, ...options.jobTiming };
  const actorFeed = startActorFeed(nc, names, { log });
  const retries = new RetryLog(log);
  const ctx: WorkerContext = {
    js,
    jsm,
    names,
    subjects: s,
    buckets,
    kv: {
      actors: new BucketWriter(writer, buckets.actors, buckets.names.actors),
      ids: new BucketWriter(writer, buckets.ids, buckets.names.ids),
      snapshots: new BucketWriter(writer, buckets.snapshots, names.kvBucket),
    },
    kvReads: new KvLeaderReader(inbox),
    busy: new BusyIndex(buckets.busy, jsm, buckets.names.busy),
    deliveries: new DeliveryLedger(),
    skipGapReads: options.skipGapReads ?? true,
    purgeBySubject: purgeBySubjectIsSafe(nc.info?.version),
    nextTurn: new NextTurn(),
    settings: options.settings,
    summarizer: options.summarizer,
    limiter: new Limiter(options.settings.concurrency),
    history: historyNodes(writer, direct, names, s),
    metrics,
    log,
    retries,
    inspect: options.inspect,
    // The explorer's actor states (/ui/), told by each actor's host.
    actorFeed,
    jobTiming,
    refusals: new Refusals(jobTiming, retries),
    outlineFloor: new OutlineFloor(log),
    snapshotDelayMs: options.snapshotDelayMs ?? 50,
    saveDelayMs: options.saveDelayMs ?? 1_000,
    saveLingerMs,
    maxBurst: options.maxBurst ?? 500,
    backlogLimit: options.backlogLimit ?? DEFAULT_BACKLOG_LIMIT,
    maxPayload: () => nc.info?.max_payload ?? 1024 * 1024,
  };
  const maxActors = options.maxActors ?? DEFAULT_MAX_ACTORS;
  if (!(maxActors >= 1)) {
    throw new Error(`maxActors ${maxActors} is not at least 1 (Infinity: no cap)`);
  }
  const registry = new ThreadRegistry(ctx, maxActors);
  metrics.set(METRIC.actorCap, Number.isFinite(maxActors) ? maxActors : 0);
  // Shown from the start: a rate of cap passivations is defined before the first one.
  metrics.add(METRIC.capPassivations, 0);
  const maxAckPending = options.maxAckPending ?? 10_000;
  const partitions = names.partitions;
  // Single mode: one durable for every chat event. Partitioned: one per partition held, opened
  // and closed by the membership below.
  let messages: ConsumerMessages | undefined;
  let peers: SinglePeers | undefined;
  if (partitions === undefined) {
    await refuseBesideMembers(nc, names, options.failoverMs, retrying);
    if (options.singlePeers !== undefined)
      peers = await watchSinglePeers({
        js,
        jsm,
        names,
        replicas: options.replicas ?? 1,
        log,
        failoverMs: options.failoverMs ?? DEFAULT_FAILOVER_MS,
        allowPeers: options.singlePeers === "allow",
      });
    const single = await consumeSingle(js, jsm, names, ackWaitMs, maxAckPending);
    const limit = single.ackLimit > 0 ? single.ackLimit : Number.POSITIVE_INFINITY;
    ctx.deliveries.crowdAt(options.saveAtHeld ?? Math.ceil(limit * 0.9), limit);
    messages = single.messages;
  } else {
    ctx.deliveries.crowdAt(options.saveAtHeld ?? Math.ceil(maxAckPending * 0.9), maxAckPending);
  }

  const stopping = new AbortController();
  const background = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    background.add(p);
    void p.finally(() => background.delete(p));
  };

  // An event whose subject names no thread cannot be queued behind one: recorded at once.
  const deadLetterNow = (msg: JsMsg, reason: string) =>
    track(
      retryInPlace(
        () =>
          publishDeadLetter(js, names, {
            reason,
            subject: msg.subject,
            data: msg.data,
            seq: msg.seq,
            maxPayload: ctx.maxPayload(),
          }),
        {
          what: `publish a dead letter for ${msg.subject}`,
          log: ctx.retries,
          signal: stopping.signal,
        },
      ).then(
        () => {
          metrics.add(METRIC.deadLetters);
          log.warn(`dead letter: ${msg.subject} #${msg.seq}: ${reason}`);
          msg.ack();
          ctx.deliveries.released(1);
        },
        () => {},
      ),
    );

  // Caught up: once the consumer has nothing more to deliver and no delivery came for
  // CAUGHT_UP_MS, the events lingering for a shared save are saved and acknowledged at once (the
  // linger only pays while more events are coming). One timer at a time, armed by a delivery
  // that left the consumer empty, never one per event.
  let deliveries = 0;
  let caughtUpCheck: NodeJS.Timeout | undefined;
  // Set as stop() or abandon() begins: a slot draining must not be kicked into a save beside it.
  let closing = false;
  const armCaughtUp = () => {
    caughtUpCheck = setTimeout(checkCaughtUp, CAUGHT_UP_MS, deliveries);
  };
  const checkCaughtUp = (seen: number) => {
    caughtUpCheck = undefined;
    if (closing || ctx.deliveries.undelivered > 0) return;
    if (deliveries !== seen) {
      armCaughtUp();
      return;
    }
    // Events still queued are saved as they are applied; those already waiting are saved now.
    ctx.deliveries.caughtUp();
    registry.saveLingering();
  };

  // Crowded: the worker holds so many unacknowledged events that the consumer is about to stop
  // delivering (max_ack_pending). Waiting out the linger then leaves the worker idle with work
  // in the stream: threads whose events have lingered their (shorter) share of it are saved and
  // acknowledged now, and every eighth of the linger while it stays crowded, deliveries or not
  // (once the server stops delivering, none comes to trigger it). Slots wait the same share.
  let crowdedSweep: NodeJS.Timeout | undefined;
  const sweepCrowded = () => {
    crowdedSweep = undefined;
    const share = ctx.deliveries.lingerShare;
    if (closing || share >= 1) return;
    registry.saveLingering(Date.now() - saveLingerMs * share);
    crowdedSweep = setTimeout(sweepCrowded, saveLingerMs / 8);
  };
  const route = (msg: JsMsg) => {
    const epoch = ctx.deliveries.observe(msg, partitions !== undefined);
    deliveries++;
    if (!caughtUpCheck && !closing && saveLingerMs > 0 && ctx.deliveries.undelivered === 0)
      armCaughtUp();
    if (!crowdedSweep && !closing && saveLingerMs > 0 && ctx.deliveries.lingerShare < 1)
      sweepCrowded();
    const parsed = s.parseChat(msg.subject);
    if (!parsed) {
      // Not a thread's event (no slot reads it in a gap either): recorded on its own.
      deadLetterNow(msg, chatSubjectProblem(names.chatPrefix, msg.subject));
      return;
    }
    if (
      partitions !== undefined &&
      parsed.partition !== undefined &&
      parsed.partition !== s.partitionOf(parsed.thread)
    ) {
      // Published to the mapped form by hand: it would reach a worker that does not own the thread.
      deadLetterNow(
        msg,
        `partition token ${parsed.partition} is not thread '${parsed.thread}''s partition ${s.partitionOf(parsed.thread)} of ${partitions}; publish to ${s.messageCreated(parsed.thread)} (or thread.deleted) and let the server map it`,
      );
      return;
    }
    registry.deliver(parsed.thread, msg, epoch, parsed.kind);
  };

  const routeSafely = (msg: JsMsg) => {
    try {
      route(msg);
    } catch (err) {
      // Routing does not throw on input; if it ever does, the event comes back after the ack wait
      // and no slot may count on having seen it.
      ctx.deliveries.interrupt();
      ctx.deliveries.released(1);
      log.error(`could not route ${msg.subject} #${msg.seq}: ${errorText(err)}`);
    }
  };
  const single = messages;
  const pulling = single
    ? (async () => {
        for await (const msg of single) routeSafely(msg);
      })().catch((err: unknown) => {
        if (!stopping.signal.aborted)
          log.error(`consuming ${names.chatStream} stopped: ${errorText(err)}`);
      })
    : Promise.resolve();

  const held =
    partitions === undefined
      ? undefined
      : await holdPartitions({
          nc,
          js,
          names,
          s,
          partitions,
          ctx,
          registry,
          route: routeSafely,
          ackWaitMs,
          maxAckPending,
          replicas: options.replicas ?? 1,
          failoverMs: options.failoverMs,
          capacity: options.capacity,
          log,
          stopping: stopping.signal,
        });
  const membership = held?.membership;

  // Threads stored with work outstanding (a crash or a drain left summaries unanswered) get no
  // event to wake them: wake them now.
  // Partitioned, a partition's busy threads are woken when it is taken (above).
  if (partitions === undefined)
    track(
      retryInPlace(() => ctx.busy.list(), {
        what: `list the busy threads in bucket ${buckets.names.busy}`,
        log: ctx.retries,
        signal: stopping.signal,
      }).then(
        (threads) => {
          if (threads.length > 0)
            log.info(`waking ${threads.length} thread(s) with work outstanding`);
          for (const thread of threads) registry.wake(thread);
        },
        () => undefined, // stopped first
      ),
    );

  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const sweeper = setInterval(
    () => registry.sweep(idleMs),
    Math.max(50, Math.min(idleMs / 4, 5_000)),
  );
  sweeper.unref();

  const endpoint = serveMetrics({
    nc,
    jsm,
    names,
    metrics,
    registry,
    limiter: ctx.limiter,
    summarizer: options.summarizer,
    log,
  });
  if (membership) {
    endpoint.answerAsMember(membership.id);
    actorFeed.asMember(membership.id, () => membership.heard());
  }

  let stopped = false;
  return {
    registry,
    membership,
    metrics,
    buckets,
    renderMetrics: endpoint.render,
    async stop() {
      if (stopped) return;
      stopped = true;
      closing = true;
      clearInterval(sweeper);
      clearTimeout(caughtUpCheck);
      clearTimeout(crowdedSweep);
      // Partitioned: each partition drains and its lease goes at once, so the others take it.
      await held?.leave();
      await peers?.stop();
      await messages?.close();
      await pulling;
      await registry.drain();
      await Promise.allSettled([...background]);
      stopping.abort();
      endpoint.stop();
      actorFeed.stop();
      inbox.close();
    },
    abandon() {
      if (stopped) return;
      stopped = true;
      closing = true;
      stopping.abort();
      clearInterval(sweeper);
      clearTimeout(caughtUpCheck);
      clearTimeout(crowdedSweep);
      held?.abandon();
      peers?.abandon();
      messages?.stop();
      registry.abandon();
      endpoint.stop();
      actorFeed.stop();
      inbox.close();
    },
  };
}
