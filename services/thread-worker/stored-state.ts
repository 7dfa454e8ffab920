import type { ThreadState } from "../../shared/thread.ts";
import type { KvRead } from "../nats/kv-leader-reader.ts";
import type { AckLedger } from "./acks.ts";
import {
  ActorStateError,
  parsePersisted,
  restoreRecord,
  saveRecord,
  toPersisted,
  type PersistedActor,
} from "./actor-store.ts";
import { BusyIndex } from "./busy-index.ts";
import { ChatReadError } from "./chat-reader.ts";
import type { HostedActor } from "./hosted-actor.ts";
import type { IdClaims } from "./id-claims.ts";
import { METRIC } from "./metrics.ts";
import { persistedSnapshotOf, type ShellKey } from "./persisted-shell.ts";
import type { SlotTools } from "./slot-tools.ts";
import type { SnapshotSchedule } from "./snapshot-schedule.ts";

/** What `read` found of a thread in the actor bucket. */
export interface StoredRead {
  /** The bucket's entry: null when the thread was never stored, a DEL/PURGE when deleted. */
  entry: KvRead | null;
  /** The record, its tail and node texts read back; undefined when there is none. */
  restored?: { snapshot: PersistedActor; seen: number; erasing: boolean };
}

/**
 * A thread's actor state in KV: read and restored on load, saved fenced on the revision last
 * seen (a stale one is OWNERSHIP_LOST), its events acknowledged once stored, and the busy index
 * kept in step with what is stored.
 */
export class StoredState {
  readonly #tools: SlotTools;
  readonly #acks: AckLedger;
  readonly #ids: IdClaims;
  readonly #snapshots: SnapshotSchedule;
  /** Throws once the slot has ended: nothing more is stored or acknowledged then. */
  readonly #checkAlive: () => void;
  #revision = 0;
  /** Whether the busy index lists the thread; unknown until the first check after load. */
  #busyListed: boolean | undefined;
  /** XState's part of the persisted snapshot, kept while it does not change (persistedSnapshotOf). */
  readonly #shell: { key?: ShellKey; shell?: PersistedActor } = {};

  constructor(
    tools: SlotTools,
    acks: AckLedger,
    ids: IdClaims,
    snapshots: SnapshotSchedule,
    checkAlive: () => void,
  ) {
    this.#tools = tools;
    this.#acks = acks;
    this.#ids = ids;
    this.#snapshots = snapshots;
    this.#checkAlive = checkAlive;
  }

  /**
   * Reads the record and restores it (tail from CHAT, node texts from HISTORY); `found` is
   * called once a record is found, before it is read back.
   */
  async read(found: () => void): Promise<StoredRead> {
    const { ctx, thread } = this.#tools;
    const { buckets, jsm, names, kvReads } = ctx;
    const entry = await this.#tools.retry("read actor state", () =>
      kvReads.get(buckets.names.actors, thread),
    );
    let restored: StoredRead["restored"];
    // A thread never stored has no snapshot of ours either: its first write creates the key (a
    // snapshot someone else wrote is met by the writer's fence, snapshot-writer.ts). A stored
    // one's snapshot is read while its tail and nodes are: one leader round less per load.
    const reading = entry
      ? this.#tools.retry("read snapshot", () => kvReads.get(names.kvBucket, thread))
      : null;
    // Awaited below; a restore that throws first must not leave its failure unhandled.
    reading?.catch(() => undefined);
    if (entry?.operation === "PUT") {
      found();
      const record = parsePersisted(thread, entry.value, buckets.names.actors);
      const snapshot = await this.#tools.retry(
        "read the tail and the built nodes back from CHAT and HISTORY",
        () => restoreRecord(jsm, names, ctx.history, record, buckets.names.actors),
        (err) => err instanceof ChatReadError || err instanceof ActorStateError,
      );
      restored = { snapshot, seen: record.seen, erasing: record.erasing };
      ctx.metrics.add(METRIC.rehydrations);
    }
    this.#revision = entry?.revision ?? 0;
    const shown = await reading;
    this.#snapshots.found(shown);
    return restored ? { entry, restored } : { entry };
  }

  /** A new thread: not listed as busy, and nothing asked of the index to know it. */
  unlisted(): void {
    this.#busyListed = false;
  }

  /** Writes the actor state, fenced on its revision; retried in place until it is stored. */
  async save(hosted: HostedActor, seen: number, erasing: boolean): Promise<void> {
    const { ctx, thread } = this.#tools;
    if (this.#ids.due(hosted.state())) await this.#ids.flush(hosted.state());
    // The events applied so far are in the state written below: acknowledged once it is stored.
    const { acks, hadChat } = this.#acks.takeForSave();
    const record = toPersisted(
      thread,
      seen,
      erasing,
      persistedSnapshotOf(hosted.actor, this.#shell),
    );
    try {
      this.#revision = await this.#tools.retry(
        "save actor state",
        () =>
          saveRecord(
            ctx.kv.actors,
            ctx.buckets.names.actors,
            record,
            this.#revision,
            ctx.maxPayload(),
          ),
        (err) => err instanceof ActorStateError,
      );
      this.#checkAlive();
    } catch (err) {
      this.#acks.putBack(acks);
      throw err;
    }
    hosted.dirty = false;
    ctx.metrics.add(METRIC.stateSaves);
    this.#acks.ack(acks);
    // The busy index and the outline of what was just stored (written now unless one was
    // written very recently): two buckets, written at once (each an R3 write on a cluster).
    const core = hosted.state();
    const busy = BusyIndex.isBusy(core) !== this.#busyListed ? this.syncBusy(core) : undefined;
    const shown = hadChat ? this.#snapshots.afterSave(() => hosted.state()) : undefined;
    if (busy && shown) await Promise.all([busy, shown]);
    else await (busy ?? shown);
  }

  /** Lists the thread in the busy index while its stored state has work outstanding. */
  async syncBusy(core: ThreadState): Promise<void> {
    const busy = BusyIndex.isBusy(core);
    if (busy === this.#busyListed) return;
    const { ctx, thread } = this.#tools;
    await this.#tools.retry(busy ? "list the thread as busy" : "unlist the thread as busy", () =>
      busy ? ctx.busy.mark(thread) : ctx.busy.unmark(thread),
    );
    this.#busyListed = busy;
  }
}
