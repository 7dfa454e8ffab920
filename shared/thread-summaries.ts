// Summaries coming back: one, several at once, or every wanted node answered at once (a replay,
// an instant summarizer). Each stores the node and applies the cuts and batches it unblocks.
import { cutToBytes, utf8Bytes } from "./bytes.ts";
import { beginDraft, claim, endDraft, writable } from "./draft.ts";
import { InvariantError } from "./errors.ts";
import type { NodeRef } from "./names.ts";
import { store } from "./thread-build.ts";
import { settle } from "./thread-cuts.ts";
import { neededFirst, outboxPublished } from "./thread-jobs.ts";
import { findBuilt, sameRef, tailEntry, type ThreadState } from "./thread-state.ts";

export type BuiltOutcome = { type: "built" } | { type: "ignored"; reason: string };

/** A summary came back for a node the thread asked for. Others (already built, unknown) are ignored. */
export function summaryBuilt(
  state: ThreadState,
  ref: NodeRef,
  text: string,
): { state: ThreadState; outcome: BuiltOutcome } {
  if (state.deleted) return { state, outcome: { type: "ignored", reason: "thread deleted" } };
  const awaited = awaitedAt(state, ref);
  if (!awaited) {
    return {
      state,
      outcome: {
        type: "ignored",
        reason: `node ${ref.level}:${ref.index} is not awaited (already built or never asked for)`,
      },
    };
  }
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    if (awaited.list === "inflight")
      s.inflight = claim(s.inflight.filter((_, i) => i !== awaited.at));
    else s.wanted = claim(s.wanted.filter((_, i) => i !== awaited.at));
    applyBuilt(s, ref, text);
    return { state: s, outcome: { type: "built" } };
  } finally {
    endDraft(outer);
  }
}

/**
 * Several summaries that came back together: the same as `summaryBuilt` for each in order (those
 * not awaited are ignored), in one transition, so the state and its lists are copied once for
 * all of them, not once per node.
 */
export function summariesBuilt(
  state: ThreadState,
  nodes: readonly (NodeRef & { text: string })[],
): ThreadState {
  if (state.deleted || nodes.length === 0) return state;
  const outer = beginDraft();
  try {
    let s: ThreadState | undefined;
    for (const node of nodes) {
      const awaited = awaitedAt(s ?? state, node);
      if (!awaited) continue;
      s ??= { ...state };
      (s[awaited.list] = writable(s[awaited.list])).splice(awaited.at, 1);
      applyBuilt(s, { level: node.level, index: node.index }, node.text);
    }
    return s ?? state;
  } finally {
    endDraft(outer);
  }
}

/** Where a node the thread awaits is listed: running (`inflight`) or queued (`wanted`). */
function awaitedAt(
  state: ThreadState,
  ref: NodeRef,
): { list: "inflight" | "wanted"; at: number } | undefined {
  const inflight = state.inflight.findIndex((r) => sameRef(r, ref));
  if (inflight >= 0) return { list: "inflight", at: inflight };
  const wanted = state.wanted.findIndex((r) => sameRef(r, ref));
  return wanted >= 0 ? { list: "wanted", at: wanted } : undefined;
}

/** A summary as the thread keeps it (and HISTORY holds it): cut to `line`·1.25 bytes at most. */
export function boundedSummary(text: string, line: number): string {
  const limit = Math.floor(line * 1.25);
  return utf8Bytes(text) > limit ? cutToBytes(text, limit) : text;
}

/** Stores the summary of an awaited node (taken off the lists already) and applies what it allows. */
function applyBuilt(s: ThreadState, ref: NodeRef, text: string): void {
  if (text.trim() === "") {
    throw new InvariantError(
      "EMPTY_SUMMARY",
      `summary for node ${ref.level}:${ref.index} is empty; an empty reply is a summarizer failure, send summary.failed instead`,
    );
  }
  const bounded = boundedSummary(text, s.settings.line);
  let until: string;
  if (ref.level === 0) {
    const entry = tailEntry(s, ref.index);
    if (!entry)
      throw new InvariantError("LEAF_NOT_IN_TAIL", `leaf ${ref.index} is not in the tail`);
    until = entry.message.at;
  } else {
    const right = findBuilt(s, { level: ref.level - 1, index: ref.index * 2 + 1 });
    if (!right)
      throw new InvariantError(
        "CHILD_MISSING",
        `parent ${ref.level}:${ref.index} has no built right child`,
      );
    until = right.until;
  }
  store(s, { level: ref.level, index: ref.index, text: bounded, until });
  settle(s);
}

/**
 * Gives the text of a node the thread asks for, at once; `state` is the thread as it asks.
 * Undefined: no text for it (yet); the node stays wanted.
 */
export type NodeTexts = (ref: NodeRef, state: ThreadState) => string | undefined;

/**
 * Answers every job the thread asks for with `texts`, at once, until none is outstanding, and
 * empties the outbox. The same as `takeJobs` (all of them), `summaryBuilt` for each in that
 * order, again while new jobs come, then `outboxPublished` (all), in one transition: the lists
 * and the node store are copied once, not once per job. `texts` sees the state being built (to
 * make a job of it with `jobFor`) and must not keep it.
 */
export function answerWanted(state: ThreadState, texts: NodeTexts): ThreadState {
  if (state.wanted.length === 0) return outboxPublished(state, state.outbox.length);
  const outer = beginDraft();
  try {
    const s: ThreadState = { ...state };
    answerInto(s, texts);
    return s;
  } finally {
    endDraft(outer);
  }
}

export function answerInto(s: ThreadState, texts: NodeTexts): void {
  let missing: NodeRef[] | undefined;
  while (s.wanted.length > 0) {
    const started = neededFirst(s);
    s.wanted = claim([]);
    for (const ref of started) {
      const text = texts(ref, s);
      if (text === undefined) (missing ??= []).push(ref);
      else applyBuilt(s, ref, text);
    }
  }
  // Nodes without a text stay wanted, in their order (a replay: never built, held for a group).
  if (missing) s.wanted = claim(missing);
  if (s.outbox.length > 0) s.outbox = claim([]);
}
