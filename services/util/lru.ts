/**
 * A map bounded by the bytes its values are said to take, least recently used first out. The
 * prompt-builder's caches (messages by sequence, built prompts by request) are all this shape.
 */
export class ByteLru<K, V> {
  readonly #entries = new Map<K, { value: V; bytes: number }>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value, now the most recently used; `valid` false drops it and answers undefined. */
  get(key: K, valid: (value: V) => boolean = () => true): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (!valid(entry.value)) {
      this.delete(key);
      return undefined;
    }
    // Most recently used goes last: Map keeps insertion order.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Keeps the value (replacing any under the key), then evicts the oldest past the bound. */
  set(key: K, value: V, bytes: number): void {
    this.delete(key);
    // Larger than the whole bound: not kept (and what is kept stays).
    if (bytes > this.#maxBytes) return;
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.#maxBytes) break;
      this.delete(oldest);
    }
  }

  delete(key: K): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }
}
