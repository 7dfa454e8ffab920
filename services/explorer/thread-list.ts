import {
  AckPolicy,
  DeliverPolicy,
  jetstreamManager,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import { ApiError } from "../api/api-error.ts";
import { KV_OPERATION } from "../nats/kv-leader-reader.ts";
import type { ThreadReader } from "../nats/reader.ts";
import { pull } from "./pull.ts";
import type { ThreadPage, ThreadRow } from "./types.ts";

export interface ListArgs {
  /** Case-insensitive substring of the thread id; empty lists every thread. */
  filter: string;
  /** Only threads whose snapshot was written before this bucket sequence (the last page's `next`). */
  before: number | undefined;
  limit: number;
}

export interface ListerOptions {
  /** Sequences the first window spans at least (more when the stream is sparse). */
  minWindow?: number;
  /** Entries scanned per request at most: a rare filter over a huge bucket pages its scan. */
  maxScan?: number;
  /** Rows kept for pages shown again (a few hundred bytes each; default 20,000). */
  keptRows?: number;
}

/** A key of the snapshot bucket as the scan saw it: its thread and where it was last written. */
interface Seen {
  thread: string;
  seq: number;
  at: number;
}

const DEFAULT_MAX_SCAN = 100_000;

/**
 * The threads, most recently written first, from the snapshot bucket's own stream: a KV bucket
 * keeps one message per key (history 1), and each write appends at the stream's end, so the
 * stream read backwards by sequence is the threads ordered by their last snapshot write. A page
 * reads only a window at the end (or before the cursor): headers only (no snapshot bodies), on
 * an ephemeral consumer; the window is sized from the stream's density and widened until the
 * page is full. Then one read per thread shown. Nothing is kept between requests, so every
 * prompt-builder instance answers alike, and 100k threads cost what 100 do.
 */
export function threadLister(
  nc: NatsConnection,
  names: InfraNames,
  reader: ThreadReader,
  options: ListerOptions = {},
) {
  const stream = `KV_${names.kvBucket}`;
  const prefix = `$KV.${names.kvBucket}.`;
  const maxScan = options.maxScan ?? DEFAULT_MAX_SCAN;
  const keptRows = options.keptRows ?? 20_000;
  let jsmOpening: Promise<JetStreamManager> | undefined;
  const jsm = () =>
    (jsmOpening ??= jetstreamManager(nc).catch((err: unknown) => {
      jsmOpening = undefined;
      throw err;
    }));

  /** Live keys written in [start, end], oldest first (`end` Infinity: to the stream's end). */
  async function scan(start: number, end: number, match: (t: string) => boolean): Promise<Seen[]> {
    const manager = await jsm();
    // No filter: the bucket's stream holds its keys only, and a filter makes the server count
    // what the consumer would deliver subject by subject (several times a page's cost: bench
    // explorer).
    const info = await manager.consumers.add(stream, {
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: start,
      headers_only: true,
      mem_storage: true,
      num_replicas: 1,
      inactive_threshold: nanos(60_000),
    });
    const out: Seen[] = [];
    try {
      let left = Math.min(info.num_pending, end - start + 1);
      while (left > 0) {
        const batch = Math.min(left, 4_096);
        let got = 0;
        let past = false;
        await pull(nc, stream, info.name, batch, (m) => {
          got += 1;
          if (m.seq > end) {
            past = true;
            return false;
          }
          const thread = m.subject.slice(prefix.length);
          if (match(thread)) {
            const op = m.headers()?.get(KV_OPERATION);
            if (op !== "DEL" && op !== "PURGE") out.push({ thread, seq: m.seq, at: m.at });
          }
          return m.seq < end;
        });
        left -= got;
        if (past || got < batch) break;
      }
    } finally {
      await manager.consumers.delete(stream, info.name).catch(() => false);
    }
    return out;
  }

  // A bucket sequence is one write of one snapshot: what a row shows of it never changes, so
  // rows are kept by sequence and a page shown again reads only the threads written since.
  const rows = new Map<number, ThreadRow>();

  async function row(seen: Seen): Promise<ThreadRow | undefined> {
    const updated = new Date(seen.at).toISOString();
    // Thread and time checked too: a bucket deleted and made again numbers from 1 again.
    const kept = rows.get(seen.seq);
    if (kept?.thread === seen.thread && kept.updated === updated) return kept;
    const stored = await reader.storedSnapshot(seen.thread);
    if (!stored) return undefined; // deleted since the scan
    const base = { thread: seen.thread, cursor: seen.seq, updated };
    let made: ThreadRow;
    try {
      const s = stored.parse();
      made = {
        ...base,
        count: s.count,
        boundary: s.boundary,
        lines: s.lines.length,
        bytes: s.bytes,
        tail: s.tail.length,
        cutAt: s.cutAt,
        pending: s.pending,
      };
    } catch {
      made = base;
    }
    rows.set(seen.seq, made);
    if (rows.size > keptRows) rows.delete(rows.keys().next().value as number);
    return made;
  }

  return {
    async list(args: ListArgs): Promise<ThreadPage> {
      let state;
      try {
        state = (await (await jsm()).streams.info(stream)).state;
      } catch (err) {
        throw new ApiError(
          503,
          "BUCKET_UNAVAILABLE",
          `cannot read stream ${stream} of the snapshot bucket '${names.kvBucket}' (OUTLINE_KV_BUCKET): ${(err as Error).message}; start the thread worker, which creates it`,
        );
      }
      const empty = { threads: [], next: null, total: 0, scanned: 0, partial: false };
      if (state.messages === 0) return empty;
      const needle = args.filter.toLowerCase();
      const match = needle === "" ? () => true : (t: string) => t.toLowerCase().includes(needle);
      const first = state.first_seq;
      // The first page reads to the stream's end as it is when read: snapshots written since the
      // stream info (a busy worker writes all the time) are the newest, not missing.
      let end = args.before === undefined ? Infinity : Math.min(state.last_seq, args.before - 1);
      const span = Math.max(1, state.last_seq - first + 1);
      const density = state.messages / span;
      // One more than the page, to know whether another follows.
      let width = Math.max(options.minWindow ?? 64, Math.ceil(((args.limit + 1) / density) * 1.25));
      const found: Seen[] = [];
      let scanned = 0;
      while (end >= first && found.length <= args.limit && scanned < maxScan) {
        const top = Math.min(end, state.last_seq);
        const start = Math.max(first, top - width + 1);
        const seen = await scan(start, end, match);
        for (let i = seen.length - 1; i >= 0; i--) found.push(seen[i] as Seen);
        scanned += Math.round((top - start + 1) * density);
        end = start - 1;
        // A filter that matches few threads widens fast: four times per window.
        width *= 4;
      }
      const shown = found.slice(0, args.limit);
      const listed = await Promise.all(shown.map(row));
      const more = found.length > args.limit;
      const partial = !more && end >= first;
      return {
        threads: listed.filter((r): r is ThreadRow => r !== undefined),
        next: more ? (shown.at(-1)?.seq ?? null) : partial ? end + 1 : null,
        total: state.messages,
        scanned,
        partial,
      };
    },
  };
}

export type ThreadLister = ReturnType<typeof threadLister>;
