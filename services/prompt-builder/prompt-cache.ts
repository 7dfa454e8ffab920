import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { sameBytes } from "../nats/same-bytes.ts";
import { ByteLru } from "./lru.ts";
import type { StoredSnapshot } from "./reader.ts";
import type { PromptArgs } from "./requests.ts";

/** Bytes of built prompts and parsed snapshots kept for the next request (0 turns it off). */
export const DEFAULT_PROMPT_CACHE_BYTES = 32 * 1024 * 1024;

/** A parsed snapshot holds its texts as JS strings and objects: counted at 3× its bytes. */
const PARSED_FACTOR = 3;

export interface KeptSnapshot {
  kind: "snapshot";
  bytes: Uint8Array;
  /** The KV revision of the bytes. */
  revision: number;
  snapshot: OutlineSnapshot;
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
 * Built prompt bodies and parsed snapshots, one byte-bounded LRU (bench prompt). A prompt is a
 * pure function of the snapshot, the thread's messages up to its newest CHAT sequence (each
 * immutable at its sequence), the request's agent, window and format, and the operations'
 * fixed tail cap. Every request still reads the snapshot and the newest sequence afresh; a kept
 * body is served only when the snapshot's bytes are equal to those it was built from and the
 * newest sequence is the same, so a new message, a new snapshot or a deleted thread (no
 * snapshot, no messages: 404 before any lookup) is never answered from here.
 */
export class PromptCache {
  readonly #lru: ByteLru<string, KeptSnapshot | KeptBody>;

  constructor(maxBytes: number = DEFAULT_PROMPT_CACHE_BYTES) {
    this.#lru = new ByteLru(maxBytes);
  }

  get bytes(): number {
    return this.#lru.bytes;
  }

  /** The snapshot last parsed for the thread, if kept: its revision may be asked about. */
  held(thread: string): KeptSnapshot | undefined {
    const kept = this.#lru.get(`s\0${thread}`);
    return kept?.kind === "snapshot" ? kept : undefined;
  }

  /** The snapshot parsed: the parse kept from before when the bytes are the same. */
  snapshot(thread: string, stored: StoredSnapshot): KeptSnapshot {
    const key = `s\0${thread}`;
    const kept = this.#lru.get(
      key,
      (e) => e.kind === "snapshot" && sameBytes(e.bytes, stored.bytes),
    );
    if (kept?.kind === "snapshot") {
      // The same bytes put again: asked about by the newer revision from now on.
      kept.revision = stored.revision;
      return kept;
    }
    const fresh: KeptSnapshot = {
      kind: "snapshot",
      revision: stored.revision,
      snapshot: stored.parse(),
      // Ours: what the reader gave may be a view of the connection's buffer.
      bytes: stored.bytes.slice(),
    };
    this.#lru.set(key, fresh, fresh.bytes.length * PARSED_FACTOR);
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
