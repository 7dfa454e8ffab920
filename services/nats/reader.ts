import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Message } from "../../shared/events.ts";
import { summaryEventSchema, type SummaryEvent } from "../../shared/history.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { InfraNames } from "../config/names.ts";
import { DirectReader, type DirectMessage, type DirectQuery } from "./direct-reader.ts";
import { InboxRequests } from "./inbox-requests.ts";
import { KV_OPERATION } from "./kv-leader-reader.ts";
import { subjects, type Subjects } from "./subjects.ts";
import { kvStream, kvSubject, workerBucketNames } from "./buckets.ts";
import { decodeChatBody } from "./decode.ts";
import { claimedSeq, idKey } from "./id-index.ts";
import { ApiError, snapshotBehind } from "../api/api-error.ts";
import { consumeRest, storeError } from "./consume-rest.ts";
import { ByteLru } from "../util/lru.ts";
import { MessageCache } from "./message-cache.ts";
import { lazyBucket } from "./snapshot-bucket.ts";

/** A chat message as stored: the event and the CHAT stream sequence it sits at. */
export interface StoredMessage {
  message: Message;
  seq: number;
}

/** A snapshot as stored in KV: its exact bytes, and a parse of them (SPEC §8). */
export interface StoredSnapshot {
  /** The value's bytes (maybe a view of what the connection read: copy them to keep them). */
  bytes: Uint8Array;
  /** The KV revision (the stream sequence of the put) these bytes are. */
  revision: number;
  /** Parses the bytes (each call parses anew); not JSON is a 502 BAD_SNAPSHOT. */
  parse(): OutlineSnapshot;
}

/**
 * Bounded reads of one thread's state in NATS: never a scan of a stream. Every read is a direct
 * get (one request) except `messagesAfter`, which reads only the thread's messages past a
 * sequence, one direct get each up to a bound, and stops at a limit.
 */
export interface ThreadReader {
  /** The KV snapshot (SPEC §8), or undefined when the thread has none (yet, or any more). */
  snapshot(thread: string): Promise<OutlineSnapshot | undefined>;
  /** The same read, unparsed: a caller that keeps what it built from a snapshot compares bytes. */
  storedSnapshot(thread: string): Promise<StoredSnapshot | undefined>;
  /**
   * The same read for a caller that holds revision `held.revision` of the snapshot: "unchanged"
   * when that is still the key's value, without reading its bytes again (see `snapshotSince` in
   * createReader for why that holds); otherwise what `storedSnapshot` answers.
   */
  storedSnapshotSince?(
    thread: string,
    held: HeldSnapshot,
  ): Promise<StoredSnapshot | undefined | "unchanged">;
  /** The CHAT sequence of the thread's newest message.created, or 0 when it has none. */
  lastMessageSeq(thread: string): Promise<number>;
  /**
   * One message by CHAT sequence; undefined when it is gone or is not this thread's message.
   * `id`, when known, is checked against a cached copy (a recreated stream reuses sequences).
   */
  messageAt(thread: string, seq: number, id?: string): Promise<StoredMessage | undefined>;
  /**
   * The thread's valid messages stored after `afterSeq` up to `untilSeq`, oldest first: one
   * direct get each (next by the thread's subject) for the first `directReads`, the rest through
   * a consumer filtered on that subject. More than `max` stored (valid or not) throws
   * an ApiError (503): the caller would otherwise hold an unbounded list.
   */
  messagesAfter(
    thread: string,
    afterSeq: number,
    untilSeq: number,
    max: number,
    ahead?: ReadAhead,
  ): Promise<StoredMessage[]>;
  /**
   * The first read `messagesAfter(thread, afterSeq, …)` makes, sent now: a turn sends it beside
   * the snapshot and newest-sequence reads instead of after them (one round trip, not two).
   */
  readAhead?(thread: string, afterSeq: number): ReadAhead;
  /** One summary node from HISTORY (last by subject), or undefined when it was not published. */
  node(thread: string, level: number, index: number): Promise<SummaryEvent | undefined>;
  /**
   * The CHAT sequence the worker's id index names for message id `id` of the thread (the first
   * message that carried it), or undefined when the index has no entry for it (yet), or there is
   * no index to read (no worker ran on these names, or this user may not read it).
   */
  idFirstSeq?(thread: string, id: string): Promise<number | undefined>;
}

/**
 * A snapshot revision a caller holds, and a message it covers: the last of its tail (CHAT
 * sequence and id), whose presence shows the thread was not erased since (see createReader).
 */
export interface HeldSnapshot {
  revision: number;
  proof: { seq: number; id: string } | undefined;
}

/** A read sent ahead (`readAhead`): used by the `messagesAfter` of the same thread and sequence. */
export interface ReadAhead {
  readonly thread: string;
  readonly afterSeq: number;
  readonly got: Promise<DirectMessage | undefined>;
}

/** How `messagesAfter` read: direct gets alone, or a consumer past the bound. */
export type NewerReadPath = "direct" | "consumer";

export interface ReaderOptions {
  /** How long one fetch of newer messages waits for the server; the total is bounded by `max`. */
  fetchExpiresMs?: number;
  /** Bytes of parsed messages kept for the next request (default 32 MB; 0 turns it off). */
  cacheBytes?: number;
  /**
   * Newer messages `messagesAfter` reads by direct get, one request each, before it reads the
   * rest through a consumer (default 32; 0 always uses the consumer).
   */
  directReads?: number;
  /** Told of each `messagesAfter` that read: by which path, and how many stored messages. */
  onNewerRead?: (path: NewerReadPath, messages: number) => void;
}

export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * The snapshot lags the newest message by a few (the worker coalesces its writes): that many
 * direct gets cost less than a consumer's create, fetch and delete (bench prompt,
 * turns), and leave no consumer to create and clean up on the server per prompt request.
 */
export const DEFAULT_DIRECT_READS = 32;

/** How long a read waits for its answer (nats.js's default for a JetStream request). */
const READ_TIMEOUT_MS = 5_000;

/** Bytes of the per-thread sequence hints `messagesAfter` keeps (a few numbers per thread). */
const HINT_BYTES = 4 * 1024 * 1024;

/** How long the worker's id index, not found, is taken as absent before it is looked for again. */
const ID_INDEX_RECHECK_MS = 30_000;

/**
 * The message stored at `seq` as the thread worker applies it, or undefined for what it refuses:
 * decoded by the worker's own decode (strict UTF-8, the contract, the subject's thread), so a
 * body it dead-letters is never served as a message of the thread, nor given a position.
 */
function storedMessageOf(
  subject: string,
  seq: number,
  data: Uint8Array,
  thread: string,
  forms: readonly string[],
): StoredMessage | undefined {
  if (subject !== forms[0] && !forms.includes(subject)) return undefined;
  const event = decodeChatBody(thread, "message.created", subject, data);
  return event.kind === "message" ? { message: event.message, seq } : undefined;
}

const decoder = new TextDecoder();

/** A snapshot's bytes and revision, as read. */
interface Stored {
  bytes: Uint8Array;
  revision: number;
}

/** A stored body as JSON; throws when it is not. */
function jsonOf(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data)) as unknown;
}

export function createReader(
  nc: NatsConnection,
  names: InfraNames,
  options: ReaderOptions = {},
): ThreadReader {
  const s: Subjects = subjects(names);
  const bucket = lazyBucket(nc, names.kvBucket);
  const cache = new MessageCache<StoredMessage>(options.cacheBytes ?? DEFAULT_CACHE_BYTES);
  const directReads = options.directReads ?? DEFAULT_DIRECT_READS;
  // Per thread, the CHAT sequences its last direct read of newer messages stepped through: where
  // the next read's gets may start, all at once instead of one after another. A hint decides
  // only where a get starts, never what is served: every message comes from a get's answer.
  const hints = new ByteLru<string, number[]>(HINT_BYTES);
  // Every direct get of a request on an inbox of the reader's own: nats.js's request path builds
  // an Error with a stack trace per completed request (two per prompt).
  const reads = new DirectReader(new InboxRequests(nc, READ_TIMEOUT_MS));
  // Made when a read first needs a consumer (its creation asks the server for the account).
  let jsm: Promise<JetStreamManager> | undefined;
  const manager = () =>
    (jsm ??= jetstreamManager(nc).catch((err: unknown) => {
      jsm = undefined;
      throw err;
    }));
  // The worker's id index, looked for once (again a while later when it was not there): a bucket
  // a replay rebuilt into, or names no worker ran on, has none, and nothing is indexed then.
  const ids = workerBucketNames(names).ids;
  let idIndex: { found: Promise<boolean>; at: number } | undefined;
  const hasIdIndex = async (): Promise<boolean> => {
    if (!idIndex || (!(await idIndex.found) && Date.now() - idIndex.at >= ID_INDEX_RECHECK_MS)) {
      const found = manager()
        .then((m) => m.streams.info(kvStream(ids)))
        .then(
          (info) => info.config.allow_direct === true,
          () => false,
        );
      idIndex = { found, at: Date.now() };
    }
    return idIndex.found;
  };
  const direct = async (stream: string, query: DirectQuery, what: string) => {
    try {
      return await reads.get(stream, query);
    } catch (err) {
      throw storeError(what, err);
    }
  };

  /**
   * The message stored at `seq`, parsed, and kept for `messageAt` (the snapshot's tail reads
   * them by sequence once the snapshot catches up). Always parsed from the bytes just read: a kept
   * parse could be of another message at the same sequence and id (a recreated stream).
   */
  function parseAndKeep(
    stored: string,
    seq: number,
    data: Uint8Array,
    thread: string,
  ): StoredMessage | undefined {
    const forms = s.stored(thread, "message.created");
    const parsed = storedMessageOf(stored, seq, data, thread, forms);
    // Kept under the published form whichever form it was stored under.
    if (parsed) cache.set(seq, s.messageCreated(thread), parsed.message.id, parsed, data.length);
    return parsed;
  }

  /** The thread's first stored message.created at or after `from` (of any stored form). */
  function nextOf(thread: string, from: number, what: string): Promise<DirectMessage | undefined> {
    const forms = s.stored(thread, "message.created");
    // Partitioned, a thread's messages may be stored under two forms: the first of both.
    if (forms.length === 1) {
      return direct(names.chatStream, { next_by_subj: forms[0] as string, seq: from }, what);
    }
    return Promise.all(
      forms.map((subject) => direct(names.chatStream, { next_by_subj: subject, seq: from }, what)),
    ).then((all) => all.reduce((a, b) => (!a || (b && b.seq < a.seq) ? b : a), undefined));
  }

  /** The key's value as a direct get read it, or undefined for none (a delete or purge marker). */
  function valueOf(sm: DirectMessage | undefined): Stored | undefined {
    const operation = sm?.headers?.get(KV_OPERATION);
    if (!sm || (operation !== "" && operation !== undefined && operation !== "PUT")) {
      return undefined;
    }
    return sm.data.length === 0 ? undefined : { bytes: sm.data, revision: sm.seq };
  }

  /** The snapshot's bytes, or undefined when the key has none (never put, deleted, purged). */
  async function snapshotBytes(thread: string): Promise<Stored | undefined> {
    const { kv, direct: allowsDirect } = await bucket();
    const what = `the snapshot of '${thread}'`;
    if (allowsDirect) {
      const bucketName = names.kvBucket;
      return valueOf(
        await direct(`KV_${bucketName}`, { last_by_subj: `$KV.${bucketName}.${thread}` }, what),
      );
    }
    let entry;
    try {
      entry = await kv.get(thread);
    } catch (err) {
      throw storeError(what, err);
    }
    if (!entry || entry.operation !== "PUT" || entry.length === 0) return undefined;
    return { bytes: entry.value, revision: entry.revision };
  }

  function snapshotOf(thread: string, stored: Stored | undefined): StoredSnapshot | undefined {
    if (!stored) return undefined;
    const { bytes } = stored;
    return {
      ...stored,
      parse: () => {
        try {
          return JSON.parse(decoder.decode(bytes)) as OutlineSnapshot;
        } catch (err) {
          throw new ApiError(
            502,
            "BAD_SNAPSHOT",
            `the snapshot of '${thread}' in bucket '${names.kvBucket}' is not JSON (${(err as Error).message}); rebuild it with 'outline replay --thread ${thread}'`,
          );
        }
      },
    };
  }

  async function storedSnapshot(thread: string): Promise<StoredSnapshot | undefined> {
    return snapshotOf(thread, await snapshotBytes(thread));
  }

  /**
   * Whether the held revision is still the key's value, in one round trip of two small gets
   * instead of the snapshot's bytes (~150 KB on a long thread): the key's first message after
   * the revision (history 1: that is its value, a put or a delete marker), and the held tail's
   * last message. An erase removes the key's message without a marker on nats-server < 2.10,
   * but only after the thread's CHAT messages before its delete (services/thread-worker/
   * eraser.ts), the held tail's last among them: while that message is stored, so is the key.
   */
  async function snapshotSince(
    thread: string,
    held: HeldSnapshot,
  ): Promise<StoredSnapshot | undefined | "unchanged"> {
    const { direct: allowsDirect, latestOnly } = bucket.opened() ?? (await bucket());
    const proof = held.proof;
    if (!allowsDirect || !latestOnly || !proof) return storedSnapshot(thread);
    const bucketName = names.kvBucket;
    const [next, covered] = await Promise.all([
      direct(
        `KV_${bucketName}`,
        { next_by_subj: `$KV.${bucketName}.${thread}`, seq: held.revision + 1 },
        `the snapshot of '${thread}'`,
      ),
      direct(names.chatStream, { seq: proof.seq }, `message seq ${proof.seq} of '${thread}'`),
    ]);
    if (next) return snapshotOf(thread, valueOf(next));
    const stored = covered && parseAndKeep(covered.subject, covered.seq, covered.data, thread);
    // Gone (erased, or aged out): whether the key still holds the revision is read in full.
    if (stored?.message.id !== proof.id) return storedSnapshot(thread);
    return "unchanged";
  }

  return {
    async snapshot(thread) {
      return (await storedSnapshot(thread))?.parse();
    },

    storedSnapshot,

    storedSnapshotSince: snapshotSince,

    async lastMessageSeq(thread) {
      const found = await Promise.all(
        s
          .stored(thread, "message.created")
          .map((subject) =>
            direct(
              names.chatStream,
              { last_by_subj: subject },
              `the newest message of '${thread}'`,
            ),
          ),
      );
      return Math.max(0, ...found.map((sm) => sm?.seq ?? 0));
    },

    async messageAt(thread, seq, id) {
      const subject = s.messageCreated(thread);
      const hit = cache.get(seq, subject, id);
      if (hit) return hit;
      const sm = await direct(names.chatStream, { seq }, `message seq ${seq} of '${thread}'`);
      if (!sm) return undefined;
      return parseAndKeep(sm.subject, sm.seq, sm.data, thread);
    },

    readAhead(thread, afterSeq) {
      const got = nextOf(thread, afterSeq + 1, `the messages of '${thread}' after seq ${afterSeq}`);
      // Awaited by the messagesAfter it is for, or never (nothing newer): not unhandled.
      got.catch(() => undefined);
      return { thread, afterSeq, got };
    },

    async messagesAfter(thread, afterSeq, untilSeq, max, ahead) {
      if (untilSeq <= afterSeq) return [];
      const forms = s.stored(thread, "message.created");
      const what = `the messages of '${thread}' after seq ${afterSeq}`;
      const out: StoredMessage[] = [];
      // Every stored message of the thread past afterSeq counts against max, valid or not.
      let read = 0;
      let next = afterSeq + 1;
      const take = (stored: string, seq: number, data: Uint8Array): void => {
        read += 1;
        if (read > max) {
          throw snapshotBehind(thread, max);
        }
        const parsed = parseAndKeep(stored, seq, data, thread);
        if (parsed) out.push(parsed);
        next = seq + 1;
      };

      // A few newer messages (the snapshot lags the newest by a few): one direct get each, for
      // "the thread's first message at or after `from`". Each get starts where the previous
      // answer ended; those the hints foresee are sent at once, before their turn.
      const gets = new Map<number, Promise<DirectMessage | undefined>>();
      if (ahead?.thread === thread && ahead.afterSeq === afterSeq) {
        // Sent before `untilSeq` was read: "none" then may only mean "none yet", so it is asked
        // again; a message found is the first after `afterSeq` (later ones are stored after it).
        gets.set(
          next,
          ahead.got.then((sm) => sm ?? nextOf(thread, next, what)),
        );
      }
      const getFrom = (from: number) => {
        let got = gets.get(from);
        if (!got) gets.set(from, (got = nextOf(thread, from, what)));
        return got;
      };
      const foreseen = (hints.get(thread) ?? []).filter((q) => q >= next && q < untilSeq);
      for (const q of foreseen.slice(0, directReads - 1)) {
        // Awaited in its turn, or never when the chain goes elsewhere: not an unhandled rejection.
        getFrom(q + 1).catch(() => undefined);
      }
      const chain: number[] = [];
      while (next <= untilSeq && chain.length < directReads) {
        const sm = await getFrom(next);
        // None (or only past untilSeq): the rest was purged meanwhile, or this is the end.
        if (!sm || sm.seq > untilSeq) {
          next = untilSeq + 1;
          break;
        }
        chain.push(sm.seq);
        take(sm.subject, sm.seq, sm.data);
      }
      if (chain.length > 0) hints.set(thread, chain, 8 * chain.length + 2 * thread.length + 64);
      if (next > untilSeq) {
        options.onNewerRead?.("direct", read);
        return out;
      }

      // More than that: through consumers, from where the direct gets stopped.
      const rest = await consumeRest(
        nc,
        manager,
        names.chatStream,
        forms,
        next,
        untilSeq,
        max,
        read,
        options.fetchExpiresMs,
        what,
      );
      for (const m of rest) take(m.subject, m.seq, m.data);
      options.onNewerRead?.("consumer", read);
      return out;
    },

    async idFirstSeq(thread, id) {
      if (!(await hasIdIndex())) return undefined;
      const value = valueOf(
        await direct(
          kvStream(ids),
          { last_by_subj: kvSubject(ids, idKey(thread, id)) },
          `the id index entry of message '${id}' of '${thread}'`,
        ),
      );
      return value && claimedSeq(value.bytes);
    },

    async node(thread, level, index) {
      const sm = await direct(
        names.historyStream,
        { last_by_subj: s.historyNode(thread, level, index) },
        `node ${level}:${index} of '${thread}'`,
      );
      if (!sm) return undefined;
      let body: unknown;
      try {
        body = jsonOf(sm.data);
      } catch {
        body = undefined;
      }
      const parsed = summaryEventSchema.safeParse(body);
      if (!parsed.success) {
        throw new ApiError(
          502,
          "BAD_NODE",
          `HISTORY holds an invalid event for node ${level}:${index} of '${thread}' (seq ${sm.seq}); rebuild the thread with 'outline replay --thread ${thread} --resummarize'`,
        );
      }
      return parsed.data;
    },
  };
}
