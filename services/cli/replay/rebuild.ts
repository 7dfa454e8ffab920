import type { Message } from "../../../shared/events.ts";
import type { SummaryJob } from "../../../shared/jobs.ts";
import { jobFor } from "../../../shared/context.ts";
import type { CoreSettings } from "../../../shared/settings.ts";
import type { NodeTextMap } from "./read.ts";
import { answerByRef, type NodeTexts } from "../../../shared/replay.ts";
import {
  appendAll,
  appendMessage,
  deleteThread,
  initialThreadState,
  type ThreadState,
} from "../../../shared/thread.ts";

/** One CHAT event of a thread, in stream order. */
export type ChatEvent = MessageEvent | { kind: "deleted"; at: string; seq: number };
type MessageEvent = { kind: "message"; message: Message; seq: number };

/** A node the thread needs is not in HISTORY: the replay cannot be exact without it. */
export class MissingNodeError extends Error {
  override readonly name = "MissingNodeError";
  constructor(readonly job: SummaryJob) {
    super(
      `node ${job.name} (level ${job.level}, index ${job.index}) of thread '${job.thread}' is not in HISTORY; ` +
        `rerun with --resummarize to build it with the configured summarizer (HISTORY_SUMMARIZER) and publish it`,
    );
  }
}

/** Builds a node HISTORY lacks (only with --resummarize); resolves to its text. */
export type Resummarize = (job: SummaryJob) => Promise<string>;

/**
 * One thread rebuilt event by event: `replayLog`'s fold (append, then answer every job from
 * HISTORY at once), kept open so a missing node can be awaited from a summarizer and the step
 * retried. The step is retried from the state before it, which the core never modifies.
 */
export class ThreadReplay {
  private s: ThreadState;
  /** `at` of every applied message by position: a rebuilt merge node's `until`. */
  private readonly ats: string[] = [];

  constructor(
    thread: string,
    settings: CoreSettings,
    /** HISTORY texts; nodes built by --resummarize are added to it. */
    private readonly texts: NodeTextMap,
    private readonly resummarize?: Resummarize,
  ) {
    this.s = initialThreadState(thread, settings);
  }

  get state(): ThreadState {
    return this.s;
  }

  atOf(position: number): string {
    return this.ats[position] ?? "";
  }

  /**
   * `answerByRef` with the texts HISTORY holds. A job's context (what a model would be sent) is
   * built only when its node is missing: a stored text does not depend on it.
   */
  private readonly fromHistory: NodeTexts = (ref, s) => {
    const text = this.texts.get(ref.level, ref.index);
    if (text === undefined) throw new MissingNodeError(jobFor(s, ref));
    return text;
  };

  private answerFromHistory(state: ThreadState): ThreadState {
    return answerByRef(state, this.fromHistory);
  }

  /**
   * This thread's events of one stream read, in stream order: the messages between deletions
   * are applied as one transition (`appendAll`), which copies what they share once. With
   * --resummarize, messages that need a node HISTORY lacks are applied one by one instead (the
   * node is built on the way); the state before them is unchanged, so they start from it.
   */
  async applyAll(events: readonly ChatEvent[]): Promise<void> {
    let i = 0;
    while (i < events.length) {
      const first = events[i] as ChatEvent;
      if (first.kind === "deleted") {
        await this.apply(first);
        i += 1;
        continue;
      }
      const run: MessageEvent[] = [];
      for (let e = events[i]; e?.kind === "message"; e = events[++i]) run.push(e);
      try {
        const { state, outcomes } = appendAll(this.s, run, this.fromHistory);
        outcomes.forEach((outcome, k) => {
          if (outcome.type === "applied") {
            this.ats[outcome.position] = (run[k] as MessageEvent).message.at;
          }
        });
        this.s = state;
      } catch (err) {
        if (!(err instanceof MissingNodeError) || !this.resummarize) throw err;
        for (const event of run) await this.apply(event);
      }
    }
  }

  async apply(event: ChatEvent): Promise<void> {
    if (event.kind === "deleted") {
      // As the thread machine does: nothing kept, the sequence remembered.
      const core = deleteThread(this.s);
      this.s = { ...core, seq: Math.max(core.seq, event.seq) };
      this.ats.length = 0;
      return;
    }
    const { state: appended, outcome } = appendMessage(this.s, event.message, event.seq);
    if (outcome.type !== "applied") return;
    this.ats[outcome.position] = event.message.at;
    for (;;) {
      try {
        this.s = this.answerFromHistory(appended);
        return;
      } catch (err) {
        if (!(err instanceof MissingNodeError) || !this.resummarize) throw err;
        const text = await this.resummarize(err.job);
        this.texts.set(err.job.level, err.job.index, text);
      }
    }
  }
}
