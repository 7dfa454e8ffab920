import { addCounts, lineDigest, parentUnits, type Digest } from "./extract/digest.ts";

/** How many levels down a free parent's digest is rebuilt from its children's. */
const FREE_DEPTH = 3;

/**
 * The digests of one process's nodes that still wait for their parent, by thread and node. A
 * merge takes its two children's (each is merged once), so only the outline's lines and the
 * tail's leaves are held; past `maxBytes` the oldest go, and their parent's merge then reads
 * them from their lines. A digest is used only for the exact line it was made with: a line
 * HISTORY holds from another writer, or a thread deleted and made again, never sees another's.
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
   * The digest of node (level, index) whose line is `line`, removed from the cache: held as
   * is, or for a free parent (its line its children's joined by ` / `) rebuilt from the
   * children's. Undefined when neither is held.
   */
  take(thread: string, level: number, index: number, line: string): Digest | undefined {
    return this.#take(thread, level, index, line, FREE_DEPTH);
  }

  #take(
    thread: string,
    level: number,
    index: number,
    line: string,
    depth: number,
  ): Digest | undefined {
    const key = keyOf(thread, level, index);
    const held = this.#digests.get(key)?.digest;
    if (held) {
      this.#drop(key);
      if (held.line === line) return held;
    }
    if (level === 0 || depth === 0) return undefined;
    const l = this.#digests.get(keyOf(thread, level - 1, 2 * index))?.digest;
    const r = this.#digests.get(keyOf(thread, level - 1, 2 * index + 1))?.digest;
    let leftLine: string;
    let rightLine: string;
    if (l && line.startsWith(`${l.line} / `)) {
      leftLine = l.line;
      rightLine = line.slice(l.line.length + 3);
    } else if (r && line.endsWith(` / ${r.line}`)) {
      rightLine = r.line;
      leftLine = line.slice(0, line.length - r.line.length - 3);
    } else return undefined;
    const n = 1 << (level - 1);
    const id = index * 2 * n;
    const left =
      this.#take(thread, level - 1, 2 * index, leftLine, depth - 1) ?? lineDigest(leftLine, id, n);
    const right =
      this.#take(thread, level - 1, 2 * index + 1, rightLine, depth - 1) ??
      lineDigest(rightLine, id + n, n);
    const common = addCounts(left.common, right.common);
    return { line, units: parentUnits(left.units, right.units, new Set()), common };
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
