import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { sameBytes } from "../nats/same-bytes.ts";
import { ByteLru } from "../util/lru.ts";
import type { StoredSnapshot } from "../nats/reader.ts";
import type { PromptArgs } from "../api/requests.ts";

/** Bytes of built prompts, and as many of parsed snapshots, kept for the next request (0: none). */
export const DEFAULT_PROMPT_CACHE_BYTES = 32 * 1024 * 1024;

/** A parsed snapshot holds its texts as JS strings and objects: counted at 3× its bytes. */
const PARSED_FACTOR = 3;

export interface KeptSnapshot {
  kind: "snapshot";
  bytes: Uint8Array;
  /** The KV revision of the bytes. */
  revision: number;
  snapshot: OutlineSnapshot;
  /** Where the bytes of `lines`' elements are (`linesIn`), when found. */
  lines: LinesAt | undefined;
}

/** The bytes of a snapshot's `lines` array between its brackets: [start, end). */
export interface LinesAt {
  start: number;
  end: number;
}

const LINES_OPEN = Buffer.from(',"lines":[');
const LINES_CLOSE = Buffer.from('],"tail":[');
const decoder = new TextDecoder();

/**
 * Where the elements of a snapshot's `lines` are in its JSON as the worker writes it
 * (`…,"seq":N,"lines":[…],"tail":[…`, shared/snapshot.ts), or undefined in another layout. Only
 * keys can match: inside a JSON string every '"' is escaped, and the fields before `lines` are
 * ids, numbers and times.
 */
export function linesIn(bytes: Uint8Array): LinesAt | undefined {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const open = buf.indexOf(LINES_OPEN);
  if (open < 0) return undefined;
  const start = open + LINES_OPEN.length;
  const end = buf.indexOf(LINES_CLOSE, start);
  return end < 0 ? undefined : { start, end };
}

/**
 * `bytes` parsed, its `lines` taken from `kept` when their bytes are the same: between two cuts
 * the worker writes a snapshot per message whose lines (~100 KB of a ~150 KB snapshot) do not
 * change, and a turn then parses only the rest, and renders the outline it rendered before
 * (PromptTurns keys it by the lines array). Equal bytes parse to equal values, so the result is
 * what a parse of the whole would give; undefined when that cannot be shown (the caller parses
 * the whole, with its errors).
 */
export function parseWithLinesOf(
  kept: KeptSnapshot,
  bytes: Uint8Array,
  at: LinesAt | undefined,
): OutlineSnapshot | undefined {
  const was = kept.lines;
  if (!was || !at || was.end - was.start !== at.end - at.start) return undefined;
  const same = Buffer.compare(
    Buffer.from(kept.bytes.buffer, kept.bytes.byteOffset + was.start, was.end - was.start),
    Buffer.from(bytes.buffer, bytes.byteOffset + at.start, at.end - at.start),
  );
  if (same !== 0) return undefined;
  let rest: unknown;
  try {
    rest = JSON.parse(
      decoder.decode(bytes.subarray(0, at.start)) + decoder.decode(bytes.subarray(at.end)),
    );
  } catch {
    return undefined;
  }
  if (typeof rest !== "object" || rest === null || Array.isArray(rest)) return undefined;
  const parsed = rest as OutlineSnapshot;
  if (!Array.isArray(parsed.lines) || parsed.lines.length !== 0) return undefined;
  parsed.lines = kept.snapshot.lines;
  return parsed;
}

interface KeptBody {
  kind: "body";
  /** The snapshot's bytes it was built from; undefined for a thread without one. */
  snapshot: Uint8Array | undefined;
  /** The thread's newest CHAT sequence when it was built. */
  lastSeq: number;
  /** The body's chunks (see PromptTurns.body), and their bytes in all. */
  body: readonly Buffer[];
  bytes: number;
}

/**
 * Built prompt bodies and parsed snapshots, each in a byte-bounded LRU (bench prompt). A prompt is a
 * pure function of the snapshot, the thread's messages up to its newest CHAT sequence (each
 * immutable at its sequence), the request's agent, window and format, and the operations'
 * fixed tail cap. Every request still reads the snapshot and the newest sequence afresh; a kept
 * body is served only when the snapshot's bytes are equal to those it was built from and the
 * newest sequence is the same, so a new message, a new snapshot or a deleted thread (no
 * snapshot, no messages: 404 before any lookup) is never answered from here.
 */
export class PromptCache {
  readonly #lru: ByteLru<string, KeptBody>;
  /**
   * Parsed snapshots, bounded apart from the bodies: a real turn never reuses a body (each has a
   * new message) but does reuse its thread's snapshot parse, and in one bound the bodies of many
   * threads taken in turns evicted every snapshot before its thread's next turn (bench prompt,
   * 40 threads: ~0.75 MB of body and snapshot a thread).
   */
  readonly #snapshots: ByteLru<string, KeptSnapshot>;

  constructor(maxBytes: number = DEFAULT_PROMPT_CACHE_BYTES) {
    this.#lru = new ByteLru(maxBytes);
    this.#snapshots = new ByteLru(maxBytes);
  }

  get bytes(): number {
    return this.#lru.bytes + this.#snapshots.bytes;
  }

  /** The snapshot last parsed for the thread, if kept: its revision may be asked about. */
  held(thread: string): KeptSnapshot | undefined {
    return this.#snapshots.get(thread);
  }

  /**
   * The snapshot parsed: the parse kept from before when the bytes are the same; when only the
   * lines are, a parse of the rest around the kept lines (`parseWithLinesOf`).
   */
  snapshot(thread: string, stored: StoredSnapshot): KeptSnapshot {
    const kept = this.#snapshots.get(thread);
    if (kept && sameBytes(kept.bytes, stored.bytes)) {
      // The same bytes put again: asked about by the newer revision from now on.
      kept.revision = stored.revision;
      return kept;
    }
    // Ours: what the reader gave may be a view of the connection's buffer.
    const bytes = stored.bytes.slice();
    const lines = linesIn(bytes);
    const fresh: KeptSnapshot = {
      kind: "snapshot",
      revision: stored.revision,
      snapshot: (kept && parseWithLinesOf(kept, bytes, lines)) || stored.parse(),
      bytes,
      lines,
    };
    this.#snapshots.set(thread, fresh, fresh.bytes.length * PARSED_FACTOR);
    return fresh;
  }

  /** The body built for these arguments from this snapshot and newest sequence, if kept. */
  body(
    args: PromptArgs,
    snapshot: Uint8Array | undefined,
    lastSeq: number,
  ): readonly Buffer[] | undefined {
    const kept = this.#lru.get(
      bodyKey(args),
      (e) => e.kind === "body" && e.lastSeq === lastSeq && sameBytes(e.snapshot, snapshot),
    );
    return kept?.kind === "body" ? kept.body : undefined;
  }

  /** Keeps a body; `snapshot` must be bytes of our own (from `snapshot()`), never a view. */
  keep(
    args: PromptArgs,
    snapshot: Uint8Array | undefined,
    lastSeq: number,
    body: readonly Buffer[],
  ): void {
    const bytes = body.reduce((sum, chunk) => sum + chunk.length, 0);
    // The snapshot's bytes are usually shared with the kept parse, the chunks with the next
    // turns' bodies (PromptTurns); counted here too, to be safe.
    this.#lru.set(
      bodyKey(args),
      { kind: "body", snapshot, lastSeq, body, bytes },
      bytes + (snapshot?.length ?? 0),
    );
  }
}

const bodyKey = (args: PromptArgs): string =>
  `p\0${JSON.stringify([args.thread, args.format, args.agent, args.from ?? null])}`;
