import { dueScore, mostDuePair } from "../../shared/batch.ts";
import { foldNewlines } from "../../shared/bytes.ts";
import { lineRef } from "../../shared/names.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { estimateMessageTokens } from "../../shared/tokens.ts";
import { ApiError } from "../api/api-error.ts";
import type { Operations } from "../api/operations-interface.ts";
import type { StoredMessage, ThreadReader } from "../nats/reader.ts";
import { cutPlan } from "./cut-plan.ts";
import type { NextMerge, TailMessage, TailPage, ThreadBody } from "./types.ts";

/** Messages past the snapshot read for one page at most; more means the worker is far behind. */
const MAX_NEWER = 2_000;
/** Characters of a tail message listed; the whole text is one zoom away. */
const PREVIEW_CHARS = 280;
export const TAIL_PAGE = 50;
export const MAX_TAIL_PAGE = 500;

interface Whole {
  snapshot: OutlineSnapshot;
  messages: StoredMessage[];
  newer: number;
  note?: string;
}

/** The pair of lines the next merge batch takes first, with its due score. */
export function nextMerge(snapshot: OutlineSnapshot): NextMerge | null {
  const refs = snapshot.lines.map(lineRef);
  const index = mostDuePair(refs, snapshot.boundary);
  if (index < 0) return null;
  return {
    index,
    due: dueScore(snapshot.boundary, refs[index] as { level: number; index: number }),
  };
}

/**
 * What a thread page shows beside the outline: the tail's messages with their costs, and where
 * the next cut falls. Every read is bounded: the snapshot, one read per tail message (the tail is
 * at most tail[1] tokens, whatever the thread's length), and the few stored after the snapshot.
 */
export function threadViews(
  reader: ThreadReader,
  operations: Operations,
  settings: Pick<CoreSettings, "line" | "tail" | "outline">,
) {
  async function whole(thread: string): Promise<Whole> {
    // The snapshot as the API serves it (a thread without one yet is all tail).
    const snapshot = await operations.outline({ thread });
    const tail = await Promise.all(
      snapshot.tailSeqs.map((seq, i) => reader.messageAt(thread, seq, snapshot.tail[i])),
    );
    const messages: StoredMessage[] = [];
    for (const [i, m] of tail.entries()) {
      if (!m) {
        throw new ApiError(
          503,
          "STATE_MISSING",
          `tail message seq ${snapshot.tailSeqs[i]} of thread '${thread}' is not in NATS although the snapshot names it: the thread may have been deleted meanwhile; reload`,
        );
      }
      messages.push(m);
    }
    const known = new Set(snapshot.tail);
    const last = await reader.lastMessageSeq(thread);
    let newer: StoredMessage[] = [];
    let note: string | undefined;
    try {
      newer = (await reader.messagesAfter(thread, snapshot.seq, last, MAX_NEWER)).filter((m) => {
        if (known.has(m.message.id)) return false;
        known.add(m.message.id);
        return true;
      });
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "SNAPSHOT_BEHIND") throw err;
      note = `more than ${MAX_NEWER} messages are stored after the snapshot (the thread worker is behind or stopped); they are not listed`;
    }
    messages.push(...newer);
    return note === undefined
      ? { snapshot, messages, newer: newer.length }
      : { snapshot, messages, newer: newer.length, note };
  }

  const costsOf = (messages: StoredMessage[]) =>
    messages.map((m) => estimateMessageTokens(m.message));

  return {
    async thread(thread: string): Promise<ThreadBody> {
      const { snapshot, messages, newer, note } = await whole(thread);
      const body: ThreadBody = {
        snapshot,
        settings: { line: settings.line, tail: settings.tail, outline: settings.outline },
        nextMerge: nextMerge(snapshot),
        tail: {
          first: snapshot.boundary,
          count: messages.length,
          newer,
          cut: cutPlan(costsOf(messages), settings.tail[0]),
        },
      };
      if (note !== undefined) body.tail.note = note;
      return body;
    },

    async tail(thread: string, offset: number, limit: number): Promise<TailPage> {
      const { snapshot, messages } = await whole(thread);
      const costs = costsOf(messages);
      // Past the end is an empty page with the count, not another page: a cut shortens the tail
      // under an open page, whose next read then learns where the tail ends now.
      const from = offset;
      const page: TailMessage[] = messages.slice(from, from + limit).map((m, k) => {
        const text = m.message.text;
        return {
          position: snapshot.boundary + from + k,
          id: m.message.id,
          seq: m.seq,
          from: m.message.from,
          to: m.message.to,
          role: m.message.role,
          at: m.message.at,
          tokens: costs[from + k] as number,
          chars: text.length,
          steps: m.message.steps?.length ?? 0,
          preview: foldNewlines(text.length > PREVIEW_CHARS ? text.slice(0, PREVIEW_CHARS) : text),
        };
      });
      return {
        first: snapshot.boundary,
        count: messages.length,
        offset: from,
        cut: cutPlan(costs, settings.tail[0]),
        messages: page,
      };
    },
  };
}

export type ThreadViews = ReturnType<typeof threadViews>;
