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
import { snapshotBehind } from "../api/api-error.ts";
import { ByteLru } from "../util/lru.ts";
import type { StoredMessage } from "../nats/reader.ts";
import type { PromptFormat } from "../api/requests.ts";

/** Reads a thread's valid messages stored after `after` up to `until` (the reader's). */
export type ReadAfter = (after: number, until: number, max: number) => Promise<StoredMessage[]>;

/** Messages a thread holds past its snapshot, read so far: those in (base, upTo], oldest first. */
interface Held {
  base: number;
  upTo: number;
  after: readonly StoredMessage[];
  /** Those held before that the snapshot (base) now covers, oldest first: in its tail. */
  passed: readonly StoredMessage[];
}

/** Threads whose newer messages are held (each holds references the message cache has too). */
const HELD_THREADS = 4_096;
/** Serialized forms kept per message (agents × cut times); more is a sign of churn: started anew. */
const PIECES_PER_MESSAGE = 16;

/** Messages read for a snapshot's tail that it covers past those held (see `newer`), at most. */
const PASSED_READS = 4;

/** Blocks a run's messages are kept in before they are joined into one. */
export const BLOCKS_PER_RUN = 16;

const OPEN = Buffer.from('{"messages":[');
const COMMA = Buffer.from(",");

/**
 * What a turn's prompt is made from, kept from the last turns so a prompt after a new message
 * costs one read of that message and an append, not a rebuild (bench prompt, real turns):
 * - the messages stored after each thread's snapshot, read so far: the next turn reads only what
 *   came after them (`newer`);
 * - the outline rendered and serialized, per parsed snapshot's lines (the same between cuts);
 * - each whole message serialized, per message and agent and cut time, and the tail's whole
 *   messages joined in a few blocks (a turn joins only the new message's piece).
 * A body is the same bytes as `JSON.stringify` of the reply built from scratch, in chunks.
 */
export class PromptTurns {
  readonly #held = new ByteLru<string, Held>(HELD_THREADS);
  /** By the snapshot's lines: snapshots between two cuts share them (parseWithLinesOf). */
  readonly #outlines = new WeakMap<OutlineSnapshot["lines"], Map<string, KeptOutline>>();
  readonly #pieces = new WeakMap<Message, Map<string, Buffer>>();
  /** Per first message of a run, per agent and cut time. */
  readonly #runs = new WeakMap<Message, Map<string, Run>>();
  readonly #tails = new WeakMap<OutlineSnapshot, Promise<readonly StoredMessage[]>>();
  /** Per thread, the tail of the snapshot read last. */
  readonly #lastTails = new ByteLru<string, readonly StoredMessage[]>(HELD_THREADS);
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
      const held = this.#heldTail(snapshot);
      kept = held ? Promise.resolve(held) : read();
      this.#tails.set(snapshot, kept);
      // A failed read is not kept: the next turn reads again.
      kept.then(
        (tail) => this.#lastTails.set(snapshot.thread, tail, 1),
        () => this.#tails.delete(snapshot),
      );
    }
    return kept;
  }

  /**
   * The snapshot's tail from the messages this thread's last tail and newer messages held, when
   * they hold all of it (the same sequence and id: a message at a sequence never changes): the
   * snapshot after a message is the one before plus that message, which this turn or the one
   * before read (`newer` is asked first).
   */
  #heldTail(snapshot: OutlineSnapshot): StoredMessage[] | undefined {
    const last = this.#lastTails.get(snapshot.thread);
    if (!last) return undefined;
    const held = this.#held.get(snapshot.thread);
    // Each oldest first, as the tail: one pass over each, no index built per snapshot.
    const sources = [last, held?.passed ?? [], held?.after ?? []];
    const at = [0, 0, 0];
    const out: StoredMessage[] = [];
    const { tail, tailSeqs } = snapshot;
    for (let i = 0; i < tailSeqs.length; i++) {
      const seq = tailSeqs[i] as number;
      let found: StoredMessage | undefined;
      for (let k = 0; k < sources.length && !found; k++) {
        const source = sources[k] as readonly StoredMessage[];
        let j = at[k] as number;
        while (j < source.length && (source[j] as StoredMessage).seq < seq) j++;
        at[k] = j;
        if (source[j]?.seq === seq) found = source[j];
      }
      if (!found || found.message.id !== tail[i]) return undefined;
      out.push(found);
    }
    return out;
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
    if (!held || from < held.base || lastSeq < held.upTo) {
      // Nothing held that covers the range (a first turn, a new thread of the same id, a stream
      // that went back): read it all.
      next = { base: from, upTo: lastSeq, after: await read(from, lastSeq, max), passed: [] };
    } else if (from > held.upTo) {
      // The snapshot covers every message held and more: those few more (this turn's message,
      // written by a quick worker, whose read went out ahead) are read beside the newer ones,
      // for the snapshot's tail (`tail`). Past PASSED_READS, or failing, they are left out.
      const [after, between] = await Promise.all([
        read(from, lastSeq, max),
        read(held.upTo, from, PASSED_READS).catch(() => []),
      ]);
      next = { base: from, upTo: lastSeq, after, passed: [...held.after, ...between] };
    } else {
      const moved = from > held.base;
      let after = moved ? held.after.filter((m) => m.seq > from) : held.after;
      const passed = moved ? held.after.filter((m) => m.seq <= from) : held.passed;
      if (lastSeq > held.upTo) {
        const room = max - after.length;
        if (room <= 0) throw snapshotBehind(thread, max);
        after = [...after, ...(await read(held.upTo, lastSeq, room))];
      }
      next = { base: from, upTo: Math.max(lastSeq, held.upTo), after, passed };
    }
    this.#held.set(thread, next, 1);
    return next.after;
  }

  /**
   * The reply's body, as `JSON.stringify({ messages, stats })` of the prompt built whole, in
   * chunks to be sent one after another: kept buffers, not copied into one per turn (a 284 KB
   * copy, and garbage, each turn: bench prompt).
   */
  body(
    snapshot: OutlineSnapshot | undefined,
    input: PromptInput,
    format: PromptFormat,
    extra: { newerThanSnapshot: number; snapshotSeq: number },
  ): Buffer[] {
    const outline = this.#outline(snapshot, input, format);
    const tail = promptTail(input, this.#cost);
    const head: Buffer[] = [OPEN];
    if (outline.json) head.push(outline.json);
    if (tail.note) {
      if (head.length > 1) head.push(COMMA);
      head.push(Buffer.from(JSON.stringify(tail.note)));
    }
    if (head.length > 1 && tail.whole.length > 0) head.push(COMMA);
    const stats = { ...promptStats(outline.rendered, tail), ...extra };
    return [
      ...head,
      ...this.#blocks(tail.whole, input.agent, input.cutAt),
      Buffer.from(`],"stats":${JSON.stringify(stats)}}`),
    ];
  }

  /**
   * The whole messages serialized and joined by commas, in a few blocks: the blocks kept for the
   * longest run of these messages served before (the same first message, agent and cut time; a
   * turn appends a message to it), and one new block for the messages after that run.
   */
  #blocks(whole: readonly Message[], agent: string, cutAt: string | null): Buffer[] {
    const first = whole[0];
    if (!first) return [];
    const key = `${agent}\0${cutAt ?? ""}`;
    let runs = this.#runs.get(first);
    if (!runs || runs.size >= PIECES_PER_MESSAGE)
      this.#runs.set(first, (runs = new Map<string, Run>()));
    const run = runs.get(key);
    const held =
      run && run.messages.length <= whole.length && run.messages.every((m, i) => whole[i] === m)
        ? run
        : undefined;
    const from = held?.messages.length ?? 0;
    if (held && from === whole.length) return held.blocks;
    const pieces: Buffer[] = [];
    for (let i = from; i < whole.length; i++) {
      if (i > 0) pieces.push(COMMA);
      pieces.push(this.#piece(whole[i] as Message, key, agent, cutAt));
    }
    const before = held?.blocks ?? [];
    // Past a few blocks, joined into one again: one copy per BLOCKS_PER_RUN turns of a thread.
    const blocks =
      before.length + 1 >= BLOCKS_PER_RUN
        ? [Buffer.concat([...before, ...pieces])]
        : [...before, Buffer.concat(pieces)];
    runs.set(key, { messages: whole.slice(), blocks });
    return blocks;
  }

  #outline(
    snapshot: OutlineSnapshot | undefined,
    input: PromptInput,
    format: PromptFormat,
  ): KeptOutline {
    // A window (`from`) shows a part of the outline: rendered for the request alone.
    if (!snapshot || input.from !== undefined) return keptOutline(renderOutline(input), format);
    let kept = this.#outlines.get(snapshot.lines);
    if (!kept) this.#outlines.set(snapshot.lines, (kept = new Map<string, KeptOutline>()));
    const key = `${format}\0${input.search === true}`;
    let outline = kept.get(key);
    if (!outline) kept.set(key, (outline = keptOutline(renderOutline(input), format)));
    return outline;
  }

  /**
   * A whole message serialized; `key` is `agent` and `cutAt` as one string (made once a turn).
   * Only the agent's own state depends on `cutAt` (wholeMessage): any other message's piece is
   * kept under the key of no cut, and a cut (a new `cutAt`) serializes the tail no more.
   */
  #piece(message: Message, key: string, agent: string, cutAt: string | null): Buffer {
    let kept = this.#pieces.get(message);
    if (!kept || kept.size >= PIECES_PER_MESSAGE) {
      this.#pieces.set(message, (kept = new Map<string, Buffer>()));
    }
    const byCut = message.from === agent && message.state !== undefined;
    if (!byCut && cutAt !== null) {
      key = `${agent}\0`;
      cutAt = null;
    }
    let piece = kept.get(key);
    if (!piece) {
      piece = Buffer.from(JSON.stringify(wholeMessage(message, agent, cutAt)));
      kept.set(key, piece);
    }
    return piece;
  }
}

/** A run of whole messages served, and their serialized pieces joined by commas in blocks. */
interface Run {
  messages: readonly Message[];
  blocks: Buffer[];
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
