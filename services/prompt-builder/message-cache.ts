/**
 * Parsed chat messages by CHAT sequence, least recently used first out, bounded by the bytes the
 * messages took on the stream. A prompt reads its whole tail (hundreds of messages) by sequence
 * on every request; the message at a sequence never changes, so each is fetched and validated
 * once instead (bench prompt). A purge or a recreated stream can leave an entry behind, so a hit
 * is used only when its subject (the thread) and, when the caller knows it, its id still match.
 */
export class MessageCache<T> {
  readonly #entries = new Map<number, { subject: string; id: string; value: T; bytes: number }>();
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(seq: number, subject: string, id?: string): T | undefined {
    const entry = this.#entries.get(seq);
    if (!entry) return undefined;
    if (entry.subject !== subject || (id !== undefined && entry.id !== id)) {
      this.#drop(seq);
      return undefined;
    }
    // Most recently used goes last: Map keeps insertion order.
    this.#entries.delete(seq);
    this.#entries.set(seq, entry);
    return entry.value;
  }

  set(seq: number, subject: string, id: string, value: T, bytes: number): void {
    if (bytes > this.#maxBytes) return;
    this.#drop(seq);
    this.#entries.set(seq, { subject, id, value, bytes });
    this.#bytes += bytes;
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#drop(oldest);
    }
  }

  #drop(seq: number): void {
    const entry = this.#entries.get(seq);
    if (!entry) return;
    this.#entries.delete(seq);
    this.#bytes -= entry.bytes;
  }
}
