import type { KvWatchEntry } from "@nats-io/kv";
import { sleep as wait } from "../util/wait.ts";

/** What membership needs of a KV watch (nats.js's QueuedIterator is one). */
export type WatchLike = AsyncIterable<KvWatchEntry> & { stop(): void };

/**
 * How long one watch of the cluster bucket may take to deliver the bucket's current values. Its
 * ordered consumer reads one replica's copy, placed by the server on any: a replica a restarted
 * server is still catching up was seen holding a watch below the leader's last revision for
 * 2.5 minutes (while events piled up), and another for 2.5 s in the leader-reads test.
 */
export const WATCH_CATCH_UP_MS = 10_000;
/** How long a member joining tries watches before it gives up, naming why. */
export const WATCH_GIVE_UP_MS = 60_000;

export interface WatchFromCurrentOptions {
  /** The bucket's last revision at start, read from its stream's leader. */
  upTo: number;
  /** Opens a watch of every key, from the current values on. */
  open(): Promise<WatchLike>;
  /** Each entry, from the current values on; called for the live watch only. */
  onEntry(e: KvWatchEntry): void;
  /** For the log: "bucket outline-cluster". */
  what: string;
  log(line: string): void;
  attemptMs?: number;
  giveUpMs?: number;
  /** Tests: a clock and a wait of their own. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Watches a bucket until the watch has delivered every value up to `upTo`, then keeps feeding
 * `onEntry`. A watch that has not got there within `attemptMs` sits on a replica that is behind
 * (or stalled): it is stopped and another is made, which the server may place elsewhere, saying
 * so; after `giveUpMs` the join fails naming the revisions, rather than hang without a word.
 */
export async function watchFromCurrent(
  options: WatchFromCurrentOptions,
): Promise<{ watch: WatchLike; watching: Promise<void> }> {
  const attemptMs = options.attemptMs ?? WATCH_CATCH_UP_MS;
  const giveUpMs = options.giveUpMs ?? WATCH_GIVE_UP_MS;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => wait(ms, undefined, { unref: true }));
  const started = now();
  for (let attempt = 1; ; attempt++) {
    const watch = await options.open();
    let live = true;
    let reached = 0;
    let caughtUp: () => void = () => undefined;
    const current = new Promise<void>((resolve) => (caughtUp = resolve));
    if (options.upTo === 0) caughtUp();
    // Ends early (a closed iterator) counts as not current: the next attempt makes another.
    let ended: () => void = () => undefined;
    const over = new Promise<void>((resolve) => (ended = resolve));
    const watching = (async () => {
      try {
        for await (const e of watch) {
          if (!live) break;
          reached = Math.max(reached, e.revision);
          options.onEntry(e);
          if (reached >= options.upTo) caughtUp();
        }
      } finally {
        ended();
      }
    })();
    const outcome = await Promise.race([
      current.then(() => "current" as const),
      over.then(() => "ended" as const),
      sleep(attemptMs).then(() => "late" as const),
    ]);
    if (outcome === "current") return { watch, watching };
    live = false;
    watch.stop();
    await watching.catch(() => undefined);
    const elapsed = now() - started;
    const why =
      outcome === "ended"
        ? `ended at revision ${reached} of ${options.upTo}`
        : `reached revision ${reached} of ${options.upTo} in ${attemptMs} ms`;
    if (elapsed >= giveUpMs) {
      throw new Error(
        `the watch of ${options.what} never delivered its current values (up to revision ${options.upTo}, the stream's last at start) in ${attempt} watches over ${(elapsed / 1000).toFixed(1)} s: the last ${why}. Its replicas may be catching up after a server restarted: check \`nats stream info\` for the bucket's stream, then start again`,
      );
    }
    options.log(
      `the watch of ${options.what} ${why} (attempt ${attempt}); its consumer may sit on a replica behind the stream's leader: watching again`,
    );
  }
}
