import { renameSync } from "node:fs";
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamManager,
  type StreamInfo,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { readInOrder } from "../nats/ordered-read.ts";
import { subjects, type Subjects } from "../nats/subjects.ts";
import { decodeChatEvent } from "../nats/decode.ts";
import {
  SearchStore,
  StoreBusy,
  StoreMismatch,
  type IndexEvent,
  type StreamIdentity,
} from "./store.ts";
import { sleep } from "../util/wait.ts";

/**
 * Keeps one instance's search index up to date with CHAT. The index file holds the CHAT sequence
 * it applied last; the indexer reads on from there through an ordered consumer (no durable state
 * on the server: the file is the only record of progress, so a lost file is simply rebuilt from
 * the stream's start). Events are applied in batches, each batch and its sequence in one
 * transaction.
 *
 * The worker erases a deleted thread's CHAT events, its thread.deleted included; an index that
 * had not read that far never sees the delete. Such a removal shows as a gap in the stream
 * sequences delivered (or, at the stream's end, as a last sequence never delivered): then the
 * index asks CHAT which threads still have messages and erases the others.
 */
export interface SearchIndexer {
  /** The index file it keeps (`fallback` when `path` was held by another service). */
  readonly path: string;
  /** The index now answering (replaced by a rebuild). */
  store(): SearchStore;
  /** Resolves true once every CHAT event up to `seq` is applied; false after `timeoutMs`. */
  reach(seq: number, timeoutMs: number): Promise<boolean>;
  /** Resolves once the index has caught up with CHAT as it was at start. */
  readonly ready: Promise<void>;
  /** The sequence applied and CHAT's last sequence seen, for progress messages. */
  progress(): { applied: number; last: number };
  /** Builds a new index from CHAT's start beside the live one, then answers from it. */
  rebuild(): Promise<RebuildReport>;
  stop(): Promise<void>;
}

export interface RebuildReport {
  messages: number;
  threads: number;
  seconds: number;
}

export interface IndexerOptions {
  nc: NatsConnection;
  names: InfraNames;
  /** The index file. */
  path: string;
  /** The file taken instead when another search service holds `path` (SearchConfig). */
  fallback?: string;
  cacheMiB?: number;
  log?: (line: string) => void;
  /** Events applied per transaction at most (a query waits for at most one batch). */
  batch?: number;
  /** How often an idle indexer checks CHAT's end for removed events, in ms. */
  idleCheckMs?: number;
}

const DEFAULT_BATCH = 256;
const yieldToQueries = () => new Promise((r) => setImmediate(r));

function identityOf(info: StreamInfo): StreamIdentity {
  return { name: info.config.name, created: info.created };
}

/** Opens the index, or a new one when the file is not an index of ours. */
function openStore(path: string, cacheMiB: number | undefined, log: (l: string) => void) {
  try {
    return SearchStore.open(path, { cacheMiB });
  } catch (err) {
    if (!(err instanceof StoreMismatch)) throw err;
    log(`search: ${err.message}; building a new index from CHAT`);
    SearchStore.remove(path);
    return SearchStore.open(path, { cacheMiB });
  }
}

/** One CHAT message as the index applies it. */
function toEvent(s: Subjects, subject: string, seq: number, data: Uint8Array): IndexEvent {
  const { thread, event } = decodeChatEvent(s, subject, data);
  if (thread === undefined || event.kind === "invalid") return { kind: "other", seq };
  if (event.kind === "deleted") return { kind: "deleted", seq, thread };
  return { kind: "message", seq, thread, message: event.message };
}

export async function startIndexer(options: IndexerOptions): Promise<SearchIndexer> {
  const { nc, names } = options;
  const log = options.log ?? ((line: string) => console.error(line));
  const batchSize = options.batch ?? DEFAULT_BATCH;
  const s = subjects(names);
  const jsm: JetStreamManager = await jetstreamManager(nc);
  const js = jetstream(nc);

  let path = options.path;
  let store: SearchStore;
  try {
    store = openStore(path, options.cacheMiB, log);
  } catch (err) {
    if (!(err instanceof StoreBusy) || options.fallback === undefined) throw err;
    log(`search: ${path} is held by another search service; this one keeps ${options.fallback}`);
    path = options.fallback;
    store = openStore(path, options.cacheMiB, log);
  }
  let stopped = false;
  let consuming: ConsumerMessages | undefined;
  let swapping: Promise<void> | undefined;
  /** Stream sequence of the last event delivered (applied or waiting in `pending`). */
  let delivered = store.appliedSeq;
  let lastKnown = 0;
  let pending: IndexEvent[] = [];
  let removalSeen = false;
  let checkedThrough = 0;
  let activeSinceTick = false;
  let insertedSinceMerge = 0;
  const waiters = new Set<{ seq: number; resolve: (ok: boolean) => void }>();

  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const settleWaiters = () => {
    for (const w of waiters) {
      if (store.appliedSeq >= w.seq) {
        waiters.delete(w);
        w.resolve(true);
      }
    }
  };

  const flush = () => {
    if (pending.length === 0 && delivered <= store.appliedSeq) return;
    const counts = store.apply(pending, delivered);
    insertedSinceMerge += counts.indexed;
    pending = [];
    settleWaiters();
  };

  /** Threads whose messages are gone from CHAT lose their rows (see the interface's note). */
  async function reconcile(): Promise<void> {
    // Partitioned, messages are stored under two forms (docs/scale-out.md): one listing each.
    const present = new Set<string>();
    const filters =
      names.partitions === undefined
        ? [`${s.chatPrefix}.*.message.created`]
        : [`${s.chatPrefix}.*.message.created`, `${s.chatPrefix}.*.message.created.*`];
    for (const subjects_filter of filters) {
      const info = await jsm.streams.info(names.chatStream, { subjects_filter });
      for (const subject of Object.keys(info.state.subjects ?? {})) {
        const parsed = s.parseChat(subject);
        if (parsed) present.add(parsed.thread);
      }
    }
    flush();
    const gone = store.eraseGone(present);
    if (gone.length > 0) log(`search: erased ${gone.length} thread(s) whose messages left CHAT`);
  }

  /** A new stream (or one emptied below what the index holds) is indexed from its start. */
  function adopt(info: StreamInfo): void {
    const identity = identityOf(info);
    const known = store.stream;
    const stale =
      (known !== undefined &&
        (known.name !== identity.name || known.created !== identity.created)) ||
      store.appliedSeq > info.state.last_seq;
    if (stale) {
      log(`search: stream ${identity.name} is not the one the index was built from; rebuilding`);
      store.close();
      SearchStore.remove(path);
      store = SearchStore.open(path, { cacheMiB: options.cacheMiB });
      delivered = 0;
    }
    if (store.stream === undefined) store.setStream(identity);
  }

  async function session(): Promise<void> {
    const info = await jsm.streams.info(names.chatStream);
    adopt(info);
    lastKnown = Math.max(lastKnown, info.state.last_seq);
    const mine = store;
    delivered = store.appliedSeq;
    const from = store.appliedSeq + 1;
    const consumer = await js.consumers.get(names.chatStream, {
      ...(from > 1
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from }
        : { deliver_policy: DeliverPolicy.All }),
    });
    // Caught up: nothing was left to deliver at start (events erased at CHAT's end never come).
    if ((await consumer.info(true)).num_pending === 0) markReady();
    consuming = await consumer.consume({ max_messages: 1_024 });
    for await (const m of consuming) {
      // A rebuild replaced the index: its own reading goes on from where the new file ends.
      if (store !== mine) break;
      if (m.seq <= delivered) continue;
      if (m.seq > delivered + 1) removalSeen = true;
      delivered = m.seq;
      lastKnown = Math.max(lastKnown, m.seq);
      activeSinceTick = true;
      pending.push(toEvent(s, m.subject, m.seq, m.data));
      const caughtUp = m.info.pending === 0;
      if (pending.length >= batchSize || caughtUp) {
        flush();
        if (caughtUp) markReady();
        if (caughtUp && removalSeen) {
          removalSeen = false;
          await reconcile();
        }
        await yieldToQueries();
      }
    }
  }

  const following = (async () => {
    while (!stopped) {
      try {
        await session();
      } catch (err) {
        if (stopped) break;
        log(`search: reading CHAT failed (${(err as Error).message}); retrying in 1 s`);
        await sleep(1_000);
      }
      consuming = undefined;
      flush();
      if (swapping) await swapping;
    }
  })();

  // An idle tick: events left in a batch are applied, removed events at CHAT's end are looked
  // for, and the FTS index merges a little.
  const tick = setInterval(() => {
    if (stopped || swapping) return;
    if (activeSinceTick) {
      activeSinceTick = false;
      return;
    }
    try {
      flush();
      if (insertedSinceMerge > 0) {
        store.merge();
        insertedSinceMerge = 0;
      }
    } catch (err) {
      log(`search: writing the index failed: ${(err as Error).message}`);
      return;
    }
    void jsm.streams
      .info(names.chatStream)
      .then(async (info) => {
        lastKnown = Math.max(lastKnown, info.state.last_seq);
        const end = info.state.last_seq;
        if (end > delivered && end > checkedThrough && !activeSinceTick) {
          checkedThrough = end;
          await reconcile();
        }
      })
      .catch(() => undefined);
  }, options.idleCheckMs ?? 5_000);

  async function rebuild(): Promise<RebuildReport> {
    const started = performance.now();
    const next = `${path}.rebuild`;
    SearchStore.remove(next);
    const fresh = SearchStore.open(next, { cacheMiB: options.cacheMiB });
    let events: IndexEvent[] = [];
    let last = 0;
    try {
      const info = await jsm.streams.info(names.chatStream);
      fresh.setStream(identityOf(info));
      await readInOrder(
        nc,
        jsm,
        names.chatStream,
        {},
        () => undefined,
        (m) => {
          events.push(toEvent(s, m.subject, m.seq, m.data));
          last = m.seq;
          if (events.length >= 2_000) {
            fresh.apply(events, last);
            events = [];
            return yieldToQueries() as Promise<void>;
          }
        },
      );
      fresh.apply(events, last);
      fresh.checkpoint();
    } catch (err) {
      fresh.close();
      SearchStore.remove(next);
      throw err;
    }
    const totals = fresh.totals();
    fresh.close();
    // Swap: the follower stops, the new file takes the old one's place, and reading CHAT goes on
    // from where the new file ends.
    let release!: () => void;
    swapping = new Promise<void>((r) => (release = r));
    try {
      await consuming?.close();
      // Whatever the old index was given is applied to it, then dropped with it.
      flush();
      store.close();
      SearchStore.remove(path);
      renameSync(next, path);
      store = SearchStore.open(path, { cacheMiB: options.cacheMiB });
      delivered = store.appliedSeq;
    } finally {
      swapping = undefined;
      release();
    }
    return { ...totals, seconds: Math.round(performance.now() - started) / 1000 };
  }

  return {
    path,
    store: () => store,
    ready,
    progress: () => ({ applied: store.appliedSeq, last: Math.max(lastKnown, delivered) }),
    reach(seq, timeoutMs) {
      if (store.appliedSeq >= seq) return Promise.resolve(true);
      return new Promise((resolve) => {
        const waiter = { seq, resolve };
        waiters.add(waiter);
        setTimeout(() => {
          if (waiters.delete(waiter)) resolve(false);
        }, timeoutMs);
      });
    },
    rebuild,
    async stop() {
      stopped = true;
      clearInterval(tick);
      await consuming?.close();
      await following;
      flush();
      for (const w of waiters) w.resolve(false);
      waiters.clear();
      store.close();
    },
  };
}
