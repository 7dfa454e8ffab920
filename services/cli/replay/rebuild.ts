import type { Message } from "../../../shared/events.ts";
import type { SummaryJob } from "../../../shared/jobs.ts";
import { jobFor } from "../../../shared/job-view.ts";
import type { CoreSettings } from "../../../shared/settings.ts";
import type { NodeTextMap } from "./read.ts";
import { answerByRef, type NodeTexts } from "../../../shared/replay.ts";
import {
  appendAll,
  appendMessage,
  blockingNodes,
  deleteThread,
  initialThreadState,
  type ThreadState,
} from "../../../shared/thread.ts";

/** One CHAT event of a thread, in stream order. */
export type ChatEvent = MessageEvent | { kind: "deleted"; at: string; seq: number };
type MessageEvent = { kind: "message"; message: Message; seq: number };

/** A node a cut or a merge batch waits for is not in HISTORY: the replay cannot be exact without it. */
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
 * HISTORY at once). A node HISTORY lacks stays wanted, as in the live thread that never built it
 * (held for its summarizer group, HISTORY_GROUP); only a node that a cut or a merge batch waits
 * for is missing for real: built with --resummarize, else a MissingNodeError.
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

  /** `answerByRef` with the texts HISTORY holds; a node it lacks stays wanted. */
  private readonly fromHistory: NodeTexts = (ref) => this.texts.get(ref.level, ref.index);

  /**
   * This thread's events of one stream read, in stream order: the messages between deletions
   * are applied as one transition (`appendAll`), which copies what they share once.
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
      const { state, outcomes } = appendAll(this.s, run, this.fromHistory);
      outcomes.forEach((outcome, k) => {
        if (outcome.type === "applied") {
          this.ats[outcome.position] = (run[k] as MessageEvent).message.at;
        }
      });
      this.s = state;
      await this.unblock();
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
    this.s = answerByRef(appended, this.fromHistory);
    await this.unblock();
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
      if (!this.resummarize) throw new MissingNodeError(jobFor(this.s, first));
      for (const ref of missing) {
        const job = jobFor(this.s, ref);
        this.texts.set(ref.level, ref.index, await this.resummarize(job));
      }
      this.s = answerByRef(this.s, this.fromHistory);
    }
  }
}
