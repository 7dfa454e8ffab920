import type { Message } from "../../shared/events.ts";
import { estimateMessageTokens } from "../../shared/tokens.ts";
import {
  promptStats,
  promptTail,
  renderOutline,
  wholeMessage,
  type PromptInput,
  type RenderedOutline,
} from "../../shared/prompt.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { ApiError } from "./api-error.ts";
import { ByteLru } from "./lru.ts";
import type { StoredMessage } from "./reader.ts";
import type { PromptFormat } from "./requests.ts";

/** Reads a thread's valid messages stored after `after` up to `until` (the reader's). */
export type ReadAfter = (after: number, until: number, max: number) => Promise<StoredMessage[]>;

/** Messages a thread holds past its snapshot, read so far: those in (base, upTo], oldest first. */
interface Held {
  base: number;
  upTo: number;
  after: readonly StoredMessage[];
}

/** Threads whose newer messages are held (each holds references the message cache has too). */
const HELD_THREADS = 4_096;
/** Serialized forms kept per message (agents × cut times); more is a sign of churn: started anew. */
const PIECES_PER_MESSAGE = 16;

const OPEN = Buffer.from('{"messages":[');
const COMMA = Buffer.from(",");

/**
 * What a turn's prompt is made from, kept from the last turns so a prompt after a new message
 * costs one read of that message and an append, not a rebuild (bench prompt, real turns):
 * - the messages stored after each thread's snapshot, read so far: the next turn reads only what
 *   came after them (`newer`);
 * - the outline rendered and serialized, per parsed snapshot (a new snapshot, a new parse);
 * - each whole message serialized, per message and agent and cut time.
 * A body is the same bytes as `JSON.stringify` of the reply built from scratch, pieced together.
 */
export class PromptTurns {
  readonly #held = new ByteLru<string, Held>(HELD_THREADS);
  readonly #outlines = new WeakMap<OutlineSnapshot, Map<string, KeptOutline>>();
  readonly #pieces = new WeakMap<Message, Map<string, Buffer>>();
  readonly #tails = new WeakMap<OutlineSnapshot, Promise<readonly StoredMessage[]>>();
  readonly #costs = new WeakMap<Message, number>();
  readonly #cost = (message: Message): number => {
    let cost = this.#costs.get(message);
    if (cost === undefined) this.#costs.set(message, (cost = estimateMessageTokens(message)));
    return cost;
  };

  /** The newest sequence held for the thread: where the next turn's read of newer messages starts. */
  heldUpTo(thread: string): number | undefined {
    return this.#held.get(thread)?.upTo;
  }

  /**
   * The snapshot's tail messages, read once per parsed snapshot (the same snapshot, the same
   * messages: each is immutable at its sequence): a turn does no lookup per tail message.
   */
  tail(
    snapshot: OutlineSnapshot,
    read: () => Promise<readonly StoredMessage[]>,
  ): Promise<readonly StoredMessage[]> {
    let kept = this.#tails.get(snapshot);
    if (!kept) {
      kept = read();
      this.#tails.set(snapshot, kept);
      // A failed read is not kept: the next turn reads again.
      kept.catch(() => this.#tails.delete(snapshot));
    }
    return kept;
  }

  /**
   * The thread's messages stored after `from` (its snapshot's sequence) up to `lastSeq`: those
   * held from the last turn, and a read of only what came after them. More than `max` is a 503,
   * as the reader's own bound.
   */
  async newer(
    thread: string,
    from: number,
    lastSeq: number,
    max: number,
    read: ReadAfter,
  ): Promise<readonly StoredMessage[]> {
    const held = this.#held.get(thread);
    let next: Held;
    if (!held || from < held.base || from > held.upTo || lastSeq < held.upTo) {
      // Nothing held that covers the range (a first turn, a new thread of the same id, a stream
      // that went back): read it all.
      next = { base: from, upTo: lastSeq, after: await read(from, lastSeq, max) };
    } else {
      let after = from > held.base ? held.after.filter((m) => m.seq > from) : held.after;
      if (lastSeq > held.upTo) {
        const room = max - after.length;
        if (room <= 0) throw behind(thread, max);
        after = [...after, ...(await read(held.upTo, lastSeq, room))];
      }
      next = { base: from, upTo: Math.max(lastSeq, held.upTo), after };
    }
    this.#held.set(thread, next, 1);
    return next.after;
  }

  /** The reply's body, as `JSON.stringify({ messages, stats })` of the prompt built whole. */
  body(
    snapshot: OutlineSnapshot | undefined,
    input: PromptInput,
    format: PromptFormat,
    extra: { newerThanSnapshot: number; snapshotSeq: number },
  ): Buffer {
    const outline = this.#outline(snapshot, input, format);
    const tail = promptTail(input, this.#cost);
    const parts: Buffer[] = [OPEN];
    const push = (piece: Buffer) => {
      if (parts.length > 1) parts.push(COMMA);
      parts.push(piece);
    };
    if (outline.json) push(outline.json);
    if (tail.note) push(Buffer.from(JSON.stringify(tail.note)));
    for (const m of tail.whole) push(this.#piece(m, input.agent, input.cutAt));
    const stats = { ...promptStats(outline.rendered, tail), ...extra };
    parts.push(Buffer.from(`],"stats":${JSON.stringify(stats)}}`));
    return Buffer.concat(parts);
  }

  #outline(
    snapshot: OutlineSnapshot | undefined,
    input: PromptInput,
    format: PromptFormat,
  ): KeptOutline {
    // A window (`from`) shows a part of the outline: rendered for the request alone.
    if (!snapshot || input.from !== undefined) return keptOutline(renderOutline(input), format);
    let kept = this.#outlines.get(snapshot);
    if (!kept) this.#outlines.set(snapshot, (kept = new Map<string, KeptOutline>()));
    const key = `${format}\0${input.search === true}`;
    let outline = kept.get(key);
    if (!outline) kept.set(key, (outline = keptOutline(renderOutline(input), format)));
    return outline;
  }

  #piece(message: Message, agent: string, cutAt: string | null): Buffer {
    let kept = this.#pieces.get(message);
    if (!kept || kept.size >= PIECES_PER_MESSAGE) {
      this.#pieces.set(message, (kept = new Map<string, Buffer>()));
    }
    const key = `${agent}\0${cutAt ?? ""}`;
    let piece = kept.get(key);
    if (!piece) {
      piece = Buffer.from(JSON.stringify(wholeMessage(message, agent, cutAt)));
      kept.set(key, piece);
    }
    return piece;
  }
}

interface KeptOutline {
  rendered: RenderedOutline;
  /** The outline message in the request's format, serialized; none without lines. */
  json: Buffer | undefined;
}

function keptOutline(rendered: RenderedOutline, format: PromptFormat): KeptOutline {
  const message = format === "anthropic" ? rendered.anthropic : rendered.openai;
  return { rendered, json: message ? Buffer.from(JSON.stringify(message)) : undefined };
}

function behind(thread: string, max: number): ApiError {
  return new ApiError(
    503,
    "SNAPSHOT_BEHIND",
    `thread '${thread}' has more than ${max} messages newer than its snapshot: the thread worker is behind or not running; start it or wait for it to catch up, then retry`,
  );
}
