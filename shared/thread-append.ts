// Transitions. Each takes a state and returns a new one; the input is never modified. Appending
// messages: the checks that refuse one, then the tail, due leaves, cuts and what they allow.
import { beginDraft, endDraft, writable } from "./draft.ts";
import { InvariantError } from "./errors.ts";
import type { Message } from "./events.ts";
import { estimateMessageTokens } from "./tokens.ts";
import { advanceDue } from "./thread-build.ts";
import { planCut, settle } from "./thread-cuts.ts";
import type { TailEntry, ThreadState } from "./thread-state.ts";
import { answerInto, type NodeTexts } from "./thread-summaries.ts";
import { findInTail, handOverIds } from "./thread-tail-ids.ts";

export type AppendOutcome =
  | { type: "applied"; position: number }
  /** `firstSeq`: the id index names an earlier copy (the host may compare the two). */
  | { type: "duplicate"; reason: string; firstSeq?: number }
  | { type: "rejected"; reason: string };

/** SPEC §4 on `message.created`: append, summarise ahead, plan a cut, apply what can be. */
export function appendMessage(
  state: ThreadState,
  message: Message,
  seq = 0,
  firstSeq?: number,
): { state: ThreadState; outcome: AppendOutcome } {
  const refused = refusal(state, message, seq, firstSeq);
  if (refused) return { state, outcome: refused };
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    return { state: s, outcome: { type: "applied", position: appendInto(s, message, seq) } };
  } finally {
    endDraft(outer);
  }
}

/**
 * Why a message is not applied (a deleted thread, a sequence or id seen), or undefined. An id is
 * seen when the tail holds it or when the id index (`firstSeq`, shared/message-ids.ts) names an
 * earlier sequence for it: the tail alone forgets ids once they leave it.
 */
function refusal(
  state: ThreadState,
  message: Message,
  seq: number,
  firstSeq: number | undefined,
): AppendOutcome | undefined {
  if (message.thread !== state.thread) {
    throw new InvariantError(
      "WRONG_THREAD",
      `message ${message.id} is for thread '${message.thread}', not '${state.thread}'`,
    );
  }
  if (state.deleted) {
    return {
      type: "rejected",
      reason: `thread deleted: thread '${state.thread}' was deleted (thread.deleted up to CHAT sequence ${state.seq}); a deleted thread takes no new messages, use a new thread id`,
    };
  }
  if (seq > 0 && seq <= state.seq) {
    return {
      type: "duplicate",
      reason: `stream sequence ${seq} was already applied (last ${state.seq})`,
    };
  }
  if (firstSeq !== undefined && firstSeq !== seq) {
    return {
      type: "duplicate",
      reason: `message id '${message.id}' was first stored at stream sequence ${firstSeq}`,
      firstSeq,
    };
  }
  const already = findInTail(state.tail, message.id);
  if (already) {
    return {
      type: "duplicate",
      reason: `message id '${message.id}' was already applied at position ${already.position}`,
    };
  }
  return undefined;
}

/** Appends a message the thread takes; returns its position. */
function appendInto(s: ThreadState, message: Message, seq: number): number {
  const position = s.count;
  const cost = estimateMessageTokens(message);
  const entry: TailEntry = { message, position, seq, cost };
  const before = s.tail;
  const tail = writable(before);
  tail.push(entry);
  handOverIds(before, tail, entry, 0);
  s.tail = tail;
  s.count += 1;
  if (seq > 0) s.seq = seq;
  s.plannedCost += cost;
  s.dueCost += cost;
  advanceDue(s);
  planCut(s);
  settle(s);
  return position;
}

/** A message of the log and its stream sequence (0 when not from a stream). */
export interface LogEntry {
  message: Message;
  seq?: number;
  /** The id index names an earlier copy of the message's id. */
  firstSeq?: number;
}

/**
 * Applies messages in order, answering every job after each one with `texts`: the same as
 * `appendMessage` then `answerWanted` for each entry, in one transition, so what the messages
 * share (the tail, the node store, the lists) is copied once for all of them. A replay applies a
 * thread's messages of one stream read this way. Returns each entry's outcome.
 */
export function appendAll(
  state: ThreadState,
  entries: readonly LogEntry[],
  texts: NodeTexts,
): { state: ThreadState; outcomes: AppendOutcome[] } {
  if (entries.length === 0) return { state, outcomes: [] };
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    const outcomes: AppendOutcome[] = [];
    for (const { message, seq = 0, firstSeq } of entries) {
      const refused = refusal(s, message, seq, firstSeq);
      if (refused) outcomes.push(refused);
      else outcomes.push({ type: "applied", position: appendInto(s, message, seq) });
      answerInto(s, texts);
    }
    return { state: s, outcomes };
  } finally {
    endDraft(outer);
  }
}
