import type { Digest } from "./extract/digest.ts";

/**
 * The digests of one process's nodes that still wait for their parent, by thread and node: a
 * node's digest is read from its line when it is built (`lineDigest`, a pure function of the
 * line and its name), kept here, and taken by the merge that builds its parent (each node is
 * merged once), so that merge need not read the line again. Only the outline's lines and the
 * tail's leaves are held; past `maxBytes` the oldest go, and their parent's merge then reads
 * them from their lines: the same digest, so the same line, only a little later. A digest is
 * used only for the exact line it was made with: a line HISTORY holds from another writer, or a
 * thread deleted and made again, never sees another's.
 */
export class DigestCache {
  readonly #digests = new Map<string, { digest: Digest; bytes: number }>();
  #bytes = 0;

  constructor(readonly maxBytes = 64 << 20) {}

  get size(): number {
    return this.#digests.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  put(thread: string, level: number, index: number, digest: Digest): void {
    const key = keyOf(thread, level, index);
    this.#drop(key);
    let bytes = 2 * digest.line.length + 64;
    // A unit's terms and weights are shared with every unit of the same text (digest.ts): each
    // is counted here all the same, as an upper bound.
    for (const unit of digest.units) bytes += 2 * unit.text.length + 24 * unit.terms.length + 96;
    bytes += 32 * digest.common.terms.length;
    this.#digests.set(key, { digest, bytes });
    this.#bytes += bytes;
    for (const [oldest] of this.#digests) {
      if (this.#bytes <= this.maxBytes) break;
      this.#drop(oldest);
    }
  }

  /**
   * The digest of node (level, index) if it is held and was made from `line`, removed from the
   * cache; else undefined (the caller reads it from the line: the same digest).
   */
  take(thread: string, level: number, index: number, line: string): Digest | undefined {
    const key = keyOf(thread, level, index);
    const held = this.#digests.get(key)?.digest;
    if (!held) return undefined;
    this.#drop(key);
    return held.line === line ? held : undefined;
  }

  #drop(key: string): void {
    const held = this.#digests.get(key);
    if (!held) return;
    this.#digests.delete(key);
    this.#bytes -= held.bytes;
  }
}

const keyOf = (thread: string, level: number, index: number): string =>
  `${thread}\u0000${level}\u0000${index}`;
