import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { ThreadState } from "../../shared/thread.ts";
import { isAtRest } from "../../shared/thread.ts";
import { kvKeys, kvStream, kvSubject } from "../nats/buckets.ts";

/**
 * Threads whose stored state has work outstanding (summaries asked, cuts or a batch waiting, free
 * nodes unpublished; nodes held for their group are not work until the next event), one key each in the `<kvBucket>-busy` bucket. Actors wake on events; a
 * thread whose last events were all stored before a crash or a drain gets none, so a starting
 * worker wakes the threads listed here. Written only when a thread turns busy or settled, before
 * the events that caused it are acknowledged.
 */
export class BusyIndex {
  readonly #kv: KV;
  readonly #jsm: JetStreamManager;
  readonly #bucket: string;

  constructor(kv: KV, jsm: JetStreamManager, bucket: string) {
    this.#kv = kv;
    this.#jsm = jsm;
    this.#bucket = bucket;
  }

  static isBusy(core: ThreadState): boolean {
    return !core.deleted && (!isAtRest(core) || core.outbox.length > 0);
  }

  async mark(thread: string): Promise<void> {
    await this.#kv.put(thread, "");
  }

  /** Removed from the stream outright (no delete marker), so the bucket holds busy threads only. */
  async unmark(thread: string): Promise<void> {
    await this.#jsm.streams.purge(kvStream(this.#bucket), {
      filter: kvSubject(this.#bucket, thread),
    });
  }

  /** The busy threads (the bucket holds busy threads only: unmark purges). */
  list(): Promise<string[]> {
    return kvKeys(this.#jsm, this.#bucket);
  }
}
