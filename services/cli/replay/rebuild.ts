import type { SummaryJob } from "../../../shared/jobs.ts";
import { jobFor } from "../../../shared/job-view.ts";
import { claimId } from "../../../shared/message-ids.ts";
import {
  threadSettingsOf,
  type CoreSettings,
  type ThreadSettings,
} from "../../../shared/settings.ts";
import type { SettingsEvent } from "../../../shared/history.ts";
import { step, type MessageCreated } from "../../../shared/step.ts";
import type { NodeTextMap, StoredEvent } from "./read.ts";
import { answerByRef, type NodeTexts } from "../../../shared/replay.ts";
import {
  appendAll,
  blockingNodes,
  initialThreadState,
  type LogEntry,
  type ThreadState,
} from "../../../shared/thread.ts";

/** A node a cut or a merge batch waits for is not in HISTORY: the replay cannot be exact without it. */
export class MissingNodeError extends Error {
  override readonly name = "MissingNodeError";
  constructor(
    readonly job: SummaryJob,
    /** The settings in force, and whether the thread's log recorded them (else this replay's). */
    settings: ThreadSettings,
    recorded: boolean,
  ) {
    const under = `line ${settings.line}, tail ${settings.tail.join(",")}, outline ${settings.outline.join(",")}`;
    super(
      `node ${job.name} (level ${job.level}, index ${job.index}) of thread '${job.thread}' is not in HISTORY; ` +
        (recorded
          ? `rerun with --resummarize to build it with the configured summarizer (HISTORY_SUMMARIZER) under the thread's own settings (${under}, from its log) and publish it`
          : `its log records no settings and this replay ran under ${under}: set HISTORY_LINE, HISTORY_TAIL and HISTORY_OUTLINE to the ones the thread ran under (its snapshot shows them, 'outline outline ${job.thread} --json'), then rerun with --resummarize`),
    );
  }
}

/** Builds a node HISTORY lacks (only with --resummarize); resolves to its text. */
export type Resummarize = (job: SummaryJob) => Promise<string>;

/**
 * One thread rebuilt event by event: `replayLog`'s fold (append, then answer every job from
 * HISTORY at once). A node HISTORY lacks stays wanted, as in the live thread that never built it
 * (held for its summarizer group, HISTORY_GROUP); only a node that a cut or a merge batch waits
 * for is missing for real: built with --resummarize, else a MissingNodeError.
 */
export class ThreadReplay {
  private s: ThreadState;
  /** `at` of every applied message by position: a rebuilt merge node's `until`. */
  private readonly ats: string[] = [];
  /**
   * The worker's id index, kept while folding: id → first stream sequence. A message id is
   * applied once even after it has left the tail, as the worker applies it.
   */
  private readonly ids = new Map<string, number>();
  /** The newest CHAT sequence of the thread's events read, applied or not (`seq`). */
  private seen = 0;

  constructor(
    thread: string,
    settings: CoreSettings,
    /** HISTORY texts; nodes built by --resummarize are added to it. */
    private readonly texts: NodeTextMap,
    private readonly resummarize?: Resummarize,
    /**
     * The settings records of the thread's log (HISTORY), by `from`: each applies before the
     * first event at or after its CHAT sequence, as the worker applied it.
     */
    private readonly records: readonly SettingsEvent[] = [],
  ) {
    this.s = initialThreadState(thread, settings);
  }

  private nextRecord = 0;

  /** Applies the settings recorded for events up to `seq`. */
  private settingsUpTo(seq: number): void {
    for (
      let r = this.records[this.nextRecord];
      r && r.from <= seq;
      r = this.records[++this.nextRecord]
    ) {
      this.s = step(this.s, { type: "settings.changed", settings: threadSettingsOf(r) }).core;
    }
  }

  /** The sequence of the next settings record, or Infinity. */
  private get nextFrom(): number {
    return this.records[this.nextRecord]?.from ?? Infinity;
  }

  get state(): ThreadState {
    return this.s;
  }

  /**
   * The stream sequence the thread's snapshot shows: its newest event, applied or passed over
   * (a duplicate id, an event that does not decode), as the worker's snapshot shows it.
   */
  get seq(): number {
    return Math.max(this.s.seq, this.seen);
  }

  /** An event of the thread at `seq` was handled (one that does not decode too: dead-lettered). */
  passed(seq: number): void {
    if (seq > this.seen) this.seen = seq;
  }

  atOf(position: number): string {
    return this.ats[position] ?? "";
  }

  /** `answerByRef` with the texts HISTORY holds; a node it lacks stays wanted. */
  private readonly fromHistory: NodeTexts = (ref) => this.texts.get(ref.level, ref.index);

  /**
   * This thread's events of one stream read, in stream order: the messages between deletions
   * are applied as one transition (`appendAll`, the step's message rule over many messages),
   * which copies what they share once.
   */
  async applyAll(events: readonly StoredEvent[]): Promise<void> {
    // Applied or not (a duplicate id), each is handled: in stream order, the last is the newest.
    this.passed(events.at(-1)?.seq ?? 0);
    let i = 0;
    while (i < events.length) {
      const first = events[i] as StoredEvent;
      if (first.type === "thread.deleted") {
        await this.apply(first);
        i += 1;
        continue;
      }
      this.settingsUpTo(first.seq);
      // A run stops before the next settings record's event: it applies under other settings.
      const run: LogEntry[] = [];
      for (
        let e = events[i];
        e?.type === "message.created" && (run.length === 0 || e.seq < this.nextFrom);
        e = events[++i]
      )
        run.push(this.claimed(e));
      const { state, outcomes } = appendAll(this.s, run, this.fromHistory);
      outcomes.forEach((outcome, k) => {
        if (outcome.type === "applied") {
          this.ats[outcome.position] = (run[k] as LogEntry).message.at;
        }
      });
      this.s = state;
      await this.unblock();
    }
  }

  async apply(event: StoredEvent): Promise<void> {
    this.passed(event.seq);
    if (event.type === "thread.deleted") {
      this.s = step(this.s, event).core;
      // The worker erases the thread's id index with it.
      this.ids.clear();
      this.ats.length = 0;
      return;
    }
    this.settingsUpTo(event.seq);
    const claimed = this.claimed(event);
    const { core: appended } = step(this.s, { ...event, ...claimed, type: "message.created" });
    if (appended.count === this.s.count) return;
    this.ats[appended.count - 1] = event.message.at;
    this.s = answerByRef(appended, this.fromHistory);
    await this.unblock();
  }

  /** The message with its id claimed in the index, as the worker claims it before applying. */
  private claimed(event: MessageCreated & { seq: number }): LogEntry {
    // A deleted thread takes nothing: the worker claims no id for it either.
    if (this.s.deleted) return event;
    const claim = claimId(this.ids, event.message.id, event.seq);
    return claim.type === "duplicate" ? { ...event, firstSeq: claim.firstSeq } : event;
  }

  /**
   * While a cut or a merge batch waits for nodes HISTORY lacks: builds them with
   * --resummarize (then answers again: the step goes on, and may wait for the next), or fails
   * naming the first. HISTORY is read whole before any event is applied, so a node it lacks now
   * was never stored.
   */
  private async unblock(): Promise<void> {
    for (;;) {
      const missing = blockingNodes(this.s).filter(
        (ref) => this.texts.get(ref.level, ref.index) === undefined,
      );
      const first = missing[0];
      if (!first) return;
      if (!this.resummarize) {
        throw new MissingNodeError(
          jobFor(this.s, first),
          this.s.settings,
          this.records.some((r) => r.from <= this.s.seq),
        );
      }
      for (const ref of missing) {
        const job = jobFor(this.s, ref);
        this.texts.set(ref.level, ref.index, await this.resummarize(job));
      }
      this.s = answerByRef(this.s, this.fromHistory);
    }
  }
}
