import { encodeSnapshot, pendingOf, type OutlineSnapshot } from "../../shared/snapshot.ts";
import { isAtRest, type ThreadState } from "../../shared/thread.ts";
import type { KvRead } from "../nats/kv-leader-reader.ts";
import type { IntakeCursor } from "./intake.ts";
import type { SlotTools } from "./slot-tools.ts";
import { notOlder, parseSnapshot, writeSnapshot } from "./snapshot-writer.ts";

/**
 * Longest the stored snapshot of a thread that is not at rest may show old `pending` counts when
 * nothing else in it changed. Summaries come back between cuts and each burst of them changed only
 * those counts: in bench e2e heavy, 36-47% of all snapshot writes (each the whole outline).
 */
export const PENDING_ONLY_MS = 2_000;

/** What a written snapshot showed, beside its `pending` (the outline changes only at cuts). */
interface Shown {
  seq: number;
  boundary: number;
  count: number;
  settings: ThreadState["settings"];
  atRest: boolean;
}

/**
 * When a thread's outline snapshot is written: at most once per `snapshotDelayMs` whatever the
 * event rate, and never showing a chat event before the state that holds it is stored (a crash
 * cannot make the outline go back on the log).
 */
export class SnapshotSchedule {
  readonly #tools: SlotTools;
  readonly #due: () => void;
  /** The slot's intake: the newest event handled, applied or passed over, is what a write shows. */
  readonly #cursor: Pick<IntakeCursor, "seen">;
  /** The outline changed since the last write. */
  wanted = false;
  /** The delay is over: the loop writes it. */
  isDue = false;
  /** The snapshot bucket's revision of the thread's key (0: none). */
  revision = 0;
  /**
   * The snapshot found on load, until this slot's outline is not older than it. The last owner
   * shows summaries before it saves them: one that lost the fence or died before its save
   * leaves a snapshot newer than the state loaded here, which must not be written over it.
   */
  #found: Partial<OutlineSnapshot> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** When the waiting timer fires. */
  #at = 0;
  #lastAt = 0;
  #shown: Shown | undefined;

  /**
   * `due` is called when a requested write may run; `cursor.seen` is the newest CHAT sequence of
   * the thread handled (a write runs only once the state that records it is stored).
   */
  constructor(tools: SlotTools, due: () => void, cursor: Pick<IntakeCursor, "seen">) {
    this.#tools = tools;
    this.#due = due;
    this.#cursor = cursor;
  }

  /**
   * A write within `snapshotDelayMs`, or within `ms` (a summary-only burst while behind waits a
   * linger). A sooner request than one already waiting replaces it.
   */
  request(ms: number = this.#tools.ctx.snapshotDelayMs): void {
    this.wanted = true;
    const at = Date.now() + ms;
    if (this.#timer && this.#at <= at) return;
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.isDue = true;
      this.#due();
    }, ms);
  }

  /** After a save that stored chat events: the write now, unless one went out very recently. */
  async afterSave(core: () => ThreadState): Promise<void> {
    if (!this.wanted) return;
    if (Date.now() - this.#lastAt >= this.#tools.ctx.snapshotDelayMs) await this.write(core());
    else this.request();
  }

  /** The thread's key as the slot found it on load (null: never written). */
  found(entry: KvRead | null): void {
    this.revision = entry?.revision ?? 0;
    this.#shown = undefined;
    // Parsed once here, not on each write while the thread catches up.
    this.#found = entry?.operation === "PUT" ? parseSnapshot(entry.value) : undefined;
  }

  /**
   * Writes the snapshot of `core`. One that would change only the `pending` counts of a thread
   * still busy waits until `PENDING_ONLY_MS` after the last write (rescheduled, not dropped),
   * unless `whole` (the slot's last writes): a thread coming to rest is always written.
   */
  async write(core: ThreadState, whole = false): Promise<void> {
    this.wanted = false;
    if (core.deleted) return;
    const atRest = isAtRest(core);
    // Past the last message applied: events passed over since (a dead letter, a duplicate id)
    // are reflected too, so a reader never serves them as newer messages (SPEC §8, `seq`).
    const seq = Math.max(core.seq, this.#cursor.seen);
    if (!whole && !atRest && this.#onlyPending(core, seq)) {
      const wait = this.#lastAt + PENDING_ONLY_MS - Date.now();
      if (wait > 0) {
        this.request(wait);
        return;
      }
    }
    const mark = { seq, boundary: core.boundary, pending: pendingOf(core) };
    if (this.#found) {
      // Still behind what the last owner showed: written once the thread has caught up.
      if (!notOlder(mark, this.#found)) return;
      this.#found = undefined;
    }
    this.#lastAt = Date.now();
    const { ctx, thread, signal } = this.#tools;
    const bytes = encodeSnapshot(core, seq);
    this.revision = await writeSnapshot(ctx, thread, bytes, mark, this.revision, signal);
    const { boundary, count, settings } = core;
    this.#shown = { seq, boundary, count, settings, atRest };
  }

  /**
   * The last written snapshot showed a busy thread, and `core` up to `seq` differs from it only in
   * `pending`.
   */
  #onlyPending(core: ThreadState, seq: number): boolean {
    const shown = this.#shown;
    return (
      shown !== undefined &&
      !shown.atRest &&
      shown.seq === seq &&
      shown.boundary === core.boundary &&
      shown.count === core.count &&
      shown.settings === core.settings
    );
  }

  /** No write is scheduled (the slot ends, or the thread is erased: `forget`). */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The thread is erased: nothing to write, and its key is gone. */
  forget(): void {
    this.cancel();
    this.wanted = false;
    this.#found = undefined;
    this.#shown = undefined;
  }
}
