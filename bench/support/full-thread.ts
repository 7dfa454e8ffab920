// Bench prompt's threads: messages through the pure core (instant summaries) up to the largest
// prompt default settings give, and the core's state after one more message, as a worker has it.
import type { Message } from "../../shared/events.ts";
import { answerAll } from "../../shared/replay.ts";
import { DEFAULT_SETTINGS } from "../../shared/settings.ts";
import { appendMessage, initialThreadState, type ThreadState } from "../../shared/thread.ts";
import { estimateMessageTokens } from "../../shared/tokens.ts";
import { benchMessage } from "./load.ts";

const [, OUTLINE_HIGH] = DEFAULT_SETTINGS.outline;
const [, TAIL_HIGH] = DEFAULT_SETTINGS.tail;

export const tailTokens = (s: ThreadState): number =>
  s.tail.reduce((sum, e) => sum + estimateMessageTokens(e.message), 0);

/** The core's state after one more message, its summaries answered at once. */
export const withMessage = (state: ThreadState, message: Message, seq: number): ThreadState =>
  answerAll(appendMessage(state, message, seq).state, (job) =>
    `${job.name} ${"s".repeat(300)}`.slice(0, job.line),
  );

/**
 * Messages through the core until the outline is past 80% of its high mark and the tail past 90%
 * of its own, i.e. just before a cut: the largest prompt. Sequences are positions here; the
 * caller rebuilds the state on the sequences they were stored at.
 */
export function fullThread(thread: string): Message[] {
  let state = initialThreadState(thread, DEFAULT_SETTINGS);
  const messages: Message[] = [];
  for (let i = 0; i < 50_000; i++) {
    const message = benchMessage(thread, i);
    messages.push(message);
    state = withMessage(state, message, i + 1);
    if (state.outlineBytes >= 0.8 * OUTLINE_HIGH && tailTokens(state) >= 0.9 * TAIL_HIGH)
      return messages;
  }
  throw new Error(
    "the bench thread never reached a full outline and a full tail in 50,000 messages",
  );
}
