import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { InspectionEvent } from "xstate";
import type { CoreSettings } from "../../shared/settings.ts";
import type { InfraNames } from "../config/names.ts";
import type { KvLeaderReader } from "../nats/kv-leader-reader.ts";
import type { KvWrites } from "../nats/kv-writer.ts";
import type { Subjects } from "../nats/subjects.ts";
import type { MeteredSummarizer } from "../summarizer/index.ts";
import type { WorkerBuckets } from "../nats/buckets.ts";
import type { BusyIndex } from "./busy-index.ts";
import type { DeliveryLedger } from "./delivery-ledger.ts";
import type { HistoryNodes } from "./history-nodes.ts";
import type { Refusals } from "./refusals.ts";
import type { OutlineFloor } from "./outline-floor.ts";
import type { ActorFeed } from "./actor-feed.ts";
import type { Limiter } from "./limiter.ts";
import type { Logger } from "./log.ts";
import type { RetryLog } from "./retry-log.ts";
import type { MetricRegistry } from "./metrics.ts";
import type { NextTurn } from "./next-turn.ts";
import type { JobTiming } from "./summary-jobs.ts";

/**
 * What every thread of one worker process shares: connections, buckets, the summarizer and its
 * limiter, metrics. Built once by startThreadWorker and passed down; nothing lives at module level.
 */
export interface WorkerContext {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: InfraNames;
  subjects: Subjects;
  buckets: WorkerBuckets;
  /** Writes to the actor, id and snapshot buckets, through one KvWriter (other reads go to `buckets`). */
  kv: { actors: KvWrites; ids: KvWrites; snapshots: KvWrites };
  /** A thread's stored state and snapshot, read through their streams' leaders on load. */
  kvReads: KvLeaderReader;
  busy: BusyIndex;
  /** Which deliveries this worker saw without a hole: lets a slot skip its gap read. */
  deliveries: DeliveryLedger;
  /** Whether a slot may skip its gap read when the ledger proves contiguous deliveries. */
  skipGapReads: boolean;
  /**
   * Whether erasing a thread may purge by subject: false on nats-server < 2.10, whose filtered
   * purge moves the worker's consumer past other threads' events (services/nats/erase.ts).
   */
  purgeBySubject: boolean;
  /** Starts slot loops together on the next turn (their requests share socket writes). */
  nextTurn: NextTurn;
  settings: CoreSettings;
  summarizer: MeteredSummarizer;
  limiter: Limiter;
  history: HistoryNodes;
  metrics: MetricRegistry;
  log: Logger;
  /** Writes retried in place report their failures here, grouped by cause (retry-log.ts). */
  retries: RetryLog;
  /** XState inspection of every thread actor: only when asked for (`--inspect`). */
  inspect: ((event: InspectionEvent) => void) | undefined;
  /** The explorer's actor feed, told each actor's state after each event (actor-feed.ts). */
  actorFeed: Pick<ActorFeed, "report">;
  jobTiming: JobTiming;
  /** Nodes the summarizer refused, with their backoff: kept while their threads leave memory. */
  refusals: Refusals;
  /** Threads whose outline stays over outline[1] because nothing can merge: told once each. */
  outlineFloor: OutlineFloor;
  /** Shortest time between two snapshot writes of one thread. */
  snapshotDelayMs: number;
  /** Longest a state changed only by summaries waits before it is saved. */
  saveDelayMs: number;
  /**
   * Longest chat events applied to a thread wait for more before the state holding them is saved
   * and they are acknowledged (one save and one snapshot write for all of them).
   */
  saveLingerMs: number;
  /** Most queued events applied before one state write. */
  maxBurst: number;
  /**
   * Whole messages a thread may hold while its cuts wait for summaries. Past it the thread takes
   * no new chat events (they stay unacknowledged in the stream) until summaries catch up, so its
   * stored state stays well under max_payload whatever the backlog.
   */
  backlogLimit: number;
  /** The server's max_payload: a KV value must fit in it. */
  maxPayload(): number;
}
