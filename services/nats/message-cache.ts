import { ByteLru } from "../util/lru.ts";

/**
 * Parsed chat messages by CHAT sequence, least recently used first out, bounded by the bytes the
 * messages took on the stream. A prompt reads its whole tail (hundreds of messages) by sequence
 * on every request; the message at a sequence never changes, so each is fetched and validated
 * once instead (bench prompt). A purge or a recreated stream can leave an entry behind, so a hit
 * is used only when its subject (the thread) and, when the caller knows it, its id still match.
 */
export class MessageCache<T> {
  readonly #lru: ByteLru<number, { subject: string; id: string; value: T }>;

  constructor(maxBytes: number) {
    this.#lru = new ByteLru(maxBytes);
  }

  get bytes(): number {
    return this.#lru.bytes;
  }

  get(seq: number, subject: string, id?: string): T | undefined {
    return this.#lru.get(
      seq,
      (entry) => entry.subject === subject && (id === undefined || entry.id === id),
    )?.value;
  }

  set(seq: number, subject: string, id: string, value: T, bytes: number): void {
    this.#lru.set(seq, { subject, id, value }, bytes);
  }
}
