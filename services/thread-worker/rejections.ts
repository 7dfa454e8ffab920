import type { Message } from "../../shared/events.ts";
import type { Effect } from "../../shared/step.ts";
import { publishDeadLetter } from "../nats/dead-letter.ts";
import { readChatEvent } from "./chat-reader.ts";
import { METRIC } from "./metrics.ts";
import type { ChatEntry } from "./slot-queue.ts";
import type { SlotTools } from "./slot-tools.ts";

type Skipped = Extract<Effect, { type: "skipped" }>;

/**
 * What a thread does not apply: dead letters (invalid, for a deleted thread, an edit under a
 * re-published id) on the DEAD stream with their reason, and duplicates counted by why.
 */
export class Rejections {
  readonly #tools: SlotTools;

  constructor(tools: SlotTools) {
    this.#tools = tools;
  }

  /** The step's skips of one chat entry: duplicates counted, the rest dead-lettered. */
  async skipped(entry: ChatEntry, skips: Skipped[]): Promise<void> {
    for (const { outcome } of skips) {
      if (outcome.type !== "duplicate") await this.deadLetter(entry, outcome.reason);
      else if (entry.event.kind === "deleted")
        this.#tools.ctx.metrics.add(METRIC.duplicates, 1, { why: "deleted" });
      else if (outcome.firstSeq === undefined)
        this.#tools.ctx.metrics.add(METRIC.duplicates, 1, { why: "tail" });
      else if (entry.event.kind === "message")
        await this.#duplicateId(entry, entry.event.message, outcome.firstSeq);
    }
  }

  async deadLetter(entry: ChatEntry, reason: string): Promise<void> {
    const { ctx } = this.#tools;
    await this.#tools.retry("publish a dead letter", () =>
      publishDeadLetter(ctx.js, ctx.names, {
        reason,
        subject: entry.subject,
        data: entry.data,
        seq: entry.seq,
        maxPayload: ctx.maxPayload(),
      }),
    );
    ctx.metrics.add(METRIC.deadLetters);
    ctx.log.warn(`dead letter: ${entry.subject} #${entry.seq}: ${reason}`);
  }

  async #duplicateId(entry: ChatEntry, message: Message, firstSeq: number): Promise<void> {
    const conflict = await this.#conflictingDuplicate(message, firstSeq);
    if (conflict) await this.deadLetter(entry, conflict);
    else this.#tools.ctx.metrics.add(METRIC.duplicates, 1, { why: "id" });
  }

  /**
   * A re-published id is applied once; when its content differs from the first copy, the second
   * one is an edit the contract has no event for, so it is recorded (not silently dropped).
   */
  async #conflictingDuplicate(message: Message, firstSeq: number): Promise<string | undefined> {
    const { ctx } = this.#tools;
    const first = await this.#tools.retry("read the first copy of a re-published message id", () =>
      readChatEvent(ctx.jsm, ctx.names, firstSeq),
    );
    if (first?.event.kind !== "message") return undefined;
    if (JSON.stringify(first.event.message) === JSON.stringify(message)) return undefined;
    return `message id '${message.id}' was applied at CHAT sequence ${firstSeq} with different content; a message id is applied once, so this copy is ignored: publish a changed message under a new id`;
  }
}
