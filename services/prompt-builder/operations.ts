import type { PromptReply, ZoomLine, ZoomMessage, ZoomReply } from "../../shared/api.ts";
import { ZoomError } from "../../shared/errors.ts";
import { lineRef, type NodeRef } from "../../shared/names.ts";
import { buildAnthropicPrompt, buildOpenAIPrompt, type PromptInput } from "../../shared/prompt.ts";
import { joinedText } from "../../shared/render.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { SummaryEvent } from "../../shared/history.ts";
import { pageText, resolveZoom, type Page, type ZoomScope } from "../../shared/zoom.ts";
import { ApiError, notFound } from "../api/api-error.ts";
import { ByteLru } from "../util/lru.ts";
import type { Operations } from "../api/operations-interface.ts";
import { PromptCache } from "./prompt-cache.ts";
import { PromptTurns } from "./prompt-turns.ts";
import type { ReadAhead, StoredMessage, StoredSnapshot, ThreadReader } from "../nats/reader.ts";
import {
  promptArgs,
  threadArg,
  zoomArgs,
  type PromptArgs,
  type RawRequest,
} from "../api/requests.ts";
import { toolsFor } from "../api/tools.ts";

export type { PromptReply, ZoomLine, ZoomMessage, ZoomReply };

export interface OperationsOptions {
  /**
   * Most messages read past the snapshot for one request. The worker writes snapshots within
   * moments, so more means it is down or far behind: we answer 503 rather than read without end.
   */
  maxNewer?: number;
  /**
   * Hard cap on the whole messages' estimated tokens (the core's `tailCap`): while summaries lag,
   * cuts wait and the tail outgrows tail[1]; past this the oldest are left out with a note.
   */
  tailCap?: number | undefined;
  /**
   * Bytes of built prompt bodies kept, and as many of parsed snapshots (default 32 MB each). 0 keeps nothing at
   * all, the parts of the last turns' prompts (PromptTurns) included: every body built whole.
   */
  promptCacheBytes?: number;
  /** Told of each prompt body: served as kept (true) or built (false). */
  onPromptCache?: (hit: boolean) => void;
  /** HISTORY_SEARCH: the tools list `search` and the outline header names it. */
  search?: boolean;
}

export const DEFAULT_MAX_NEWER = 10_000;

/** Early id index reads kept until their turn asks (one per turn that read ahead a message). */
const EARLY_ID_READS = 1_024;

interface EarlyIdRead {
  /** The message id the read is of (the stored message's Nats-Msg-Id). */
  id: string;
  first: Promise<number | undefined>;
}

/** A thread as one request sees it: the snapshot, and every message whole after its outline. */
interface ThreadView {
  snapshot: OutlineSnapshot | undefined;
  /** Messages [boundary, …): the snapshot's tail, then those stored after it. */
  whole: StoredMessage[];
  newer: number;
}

function missing(what: string, thread: string): ApiError {
  return new ApiError(
    503,
    "STATE_MISSING",
    `${what} of thread '${thread}' is not in NATS although the snapshot names it: the thread may have been deleted meanwhile or the worker is still publishing; retry, and if it persists rebuild with 'outline replay --thread ${thread}'`,
    // The worker writes what a snapshot names before the snapshot: a moment later it is there.
    { retryAfter: 1 },
  );
}

/** Newer messages checked by scans of the tail, not a set of it: a turn's one or two. */
const FEW_NEWER = 8;

// Ids already whole in the snapshot, and repeats past the dedupe window, are not new messages:
// the worker applies a message id once.
function dedupe(known: readonly string[], newer: readonly StoredMessage[]): StoredMessage[] {
  if (newer.length === 0) return [];
  const seen = newer.length > FEW_NEWER ? new Set(known) : undefined;
  const out: StoredMessage[] = [];
  for (const m of newer) {
    const id = m.message.id;
    if (seen ? seen.has(id) : known.includes(id) || out.some((o) => o.message.id === id)) {
      continue;
    }
    seen?.add(id);
    out.push(m);
  }
  return out;
}

export function createOperations(
  reader: ThreadReader,
  options: OperationsOptions = {},
): Operations {
  const maxNewer = options.maxNewer ?? DEFAULT_MAX_NEWER;
  const cache = new PromptCache(options.promptCacheBytes);
  const turns = options.promptCacheBytes === 0 ? undefined : new PromptTurns();
  // What the id index said of a newer message, kept with it: a turn asks the index once per
  // message it holds (PromptTurns keeps them across turns).
  const indexed = new WeakMap<StoredMessage, boolean>();
  // Id index reads sent as soon as a turn's read ahead found a message (by its Nats-Msg-Id),
  // beside the turn's other reads instead of after them: per thread and CHAT sequence.
  const early = new ByteLru<string, EarlyIdRead>(EARLY_ID_READS);

  /**
   * Newer messages (`dedupe`d) less those whose id the worker's id index gives to an earlier
   * message: an id re-published after it left the tail, which the worker will pass over. A
   * snapshot whose tail is the whole thread needs no index (its tail holds every id). Otherwise
   * every id the snapshot reflects is in the index before it is written (id-claims.ts), and any
   * later copy of an id stored after it is a newer message `dedupe` has seen: a message without
   * an entry, or whose entry is its own, is the thread's for good.
   */
  async function notReapplied(
    thread: string,
    snapshot: OutlineSnapshot | undefined,
    newer: StoredMessage[],
    heldSnapshot = false,
  ): Promise<StoredMessage[]> {
    if (!reader.idFirstSeq || !snapshot || (snapshot.boundary === 0 && snapshot.complete)) {
      return newer;
    }
    const keep = await Promise.all(newer.map((m) => ownId(thread, m, heldSnapshot)));
    return keep.every(Boolean) ? newer : newer.filter((_, i) => keep[i]);
  }

  /**
   * The index read sent early for `m`, when it answers for the snapshot the turn uses. An entry
   * names the first message that carried the id, so an entry always answers. No entry answers
   * only for a snapshot held from an earlier turn: the read was then made after that snapshot
   * was written (and every id it reflects indexed); a snapshot read in this turn may have been
   * evaluated after the index read, and written between the two.
   */
  async function earlyFirst(
    thread: string,
    m: StoredMessage,
    heldSnapshot: boolean,
  ): Promise<{ first: number | undefined } | undefined> {
    const key = `${thread}\0${m.seq}`;
    const sent = early.get(key);
    if (!sent || sent.id !== m.message.id) return undefined;
    early.delete(key);
    const first = await sent.first.catch(() => null);
    if (first === null || (first === undefined && !heldSnapshot)) return undefined;
    return { first };
  }

  async function ownId(thread: string, m: StoredMessage, heldSnapshot = false): Promise<boolean> {
    let own = indexed.get(m);
    if (own === undefined) {
      const first =
        (await earlyFirst(thread, m, heldSnapshot)) ??
        ({ first: await reader.idFirstSeq?.(thread, m.message.id) } as const);
      own = first.first === undefined || first.first >= m.seq;
      indexed.set(m, own);
    }
    return own;
  }

  /** Sends the index read of the message a read ahead finds, as soon as it is found. */
  function readIdEarly(thread: string, ahead: ReadAhead): void {
    if (!reader.idFirstSeq) return;
    ahead.got.then(
      (sm) => {
        const id = sm?.headers?.get("Nats-Msg-Id");
        const first = id ? reader.idFirstSeq?.(thread, id) : undefined;
        if (!sm || !id || !first) return;
        // Awaited by the turn's check, or never (its snapshot held the message): not unhandled.
        first.catch(() => undefined);
        early.set(`${thread}\0${sm.seq}`, { id, first }, 1);
      },
      () => undefined,
    );
  }

  async function newerThan(
    thread: string,
    snapshot: OutlineSnapshot | undefined,
    lastSeq: number,
  ): Promise<StoredMessage[]> {
    const after = snapshot?.seq ?? 0;
    const read = await reader.messagesAfter(thread, after, lastSeq, maxNewer);
    return notReapplied(thread, snapshot, dedupe(snapshot?.tail ?? [], read));
  }

  async function tailOf(thread: string, snapshot: OutlineSnapshot): Promise<StoredMessage[]> {
    const read = await Promise.all(
      snapshot.tailSeqs.map((seq, i) => reader.messageAt(thread, seq, snapshot.tail[i])),
    );
    const out: StoredMessage[] = [];
    for (const [i, m] of read.entries()) {
      if (!m) throw missing(`tail message seq ${snapshot.tailSeqs[i]}`, thread);
      out.push(m);
    }
    return out;
  }

  async function wholeAfter(
    thread: string,
    snapshot: OutlineSnapshot | undefined,
    lastSeq: number,
  ): Promise<ThreadView> {
    const [tail, newer] = await Promise.all([
      snapshot ? tailOf(thread, snapshot) : Promise.resolve([]),
      newerThan(thread, snapshot, lastSeq),
    ]);
    return { snapshot, whole: [...tail, ...newer], newer: newer.length };
  }

  async function view(thread: string): Promise<ThreadView> {
    const [snapshot, lastSeq] = await Promise.all([
      reader.snapshot(thread),
      reader.lastMessageSeq(thread),
    ]);
    if (!snapshot && lastSeq === 0) throw notFound(thread);
    return wholeAfter(thread, snapshot, lastSeq);
  }

  const inputOf = (
    args: PromptArgs,
    snapshot: OutlineSnapshot | undefined,
    whole: readonly StoredMessage[],
  ): PromptInput => ({
    agent: args.agent,
    from: args.from,
    lines: snapshot?.lines ?? [],
    cutAt: snapshot?.cutAt ?? null,
    tail: whole.map((m) => m.message),
    tailCap: options.tailCap,
    firstPosition: snapshot?.boundary ?? 0,
    search: options.search === true,
  });

  /**
   * A prompt's body from the parts the last turns left (PromptTurns): only the messages stored
   * after those already held are read, the outline is serialized once per snapshot and each
   * whole message once per agent.
   */
  async function turnBody(
    kept: PromptTurns,
    args: PromptArgs,
    snapshot: OutlineSnapshot | undefined,
    lastSeq: number,
    ahead: ReadAhead | undefined,
    heldSnapshot: boolean,
  ): Promise<Buffer[]> {
    const thread = args.thread;
    // The newer messages first (their read went out with the snapshot's): a snapshot written
    // after this turn's message arrived holds it in its tail, which is then taken from what is
    // held, not read message by message.
    const read = await kept.newer(
      thread,
      snapshot?.seq ?? 0,
      lastSeq,
      maxNewer,
      (after, until, max) => reader.messagesAfter(thread, after, until, max, ahead),
    );
    const tail = snapshot ? await kept.tail(snapshot, () => tailOf(thread, snapshot)) : [];
    const newer = await notReapplied(
      thread,
      snapshot,
      dedupe(snapshot?.tail ?? [], read),
      heldSnapshot,
    );
    return kept.body(snapshot, inputOf(args, snapshot, [...tail, ...newer]), args.format, {
      newerThanSnapshot: newer.length,
      snapshotSeq: snapshot?.seq ?? 0,
    });
  }

  function promptOf(args: PromptArgs, { snapshot, whole, newer }: ThreadView): PromptReply {
    const input = inputOf(args, snapshot, whole);
    const built =
      args.format === "anthropic" ? buildAnthropicPrompt(input) : buildOpenAIPrompt(input);
    return {
      messages: built.messages,
      stats: { ...built.stats, newerThanSnapshot: newer, snapshotSeq: snapshot?.seq ?? 0 },
    };
  }

  async function zoomMessage(
    thread: string,
    snapshot: OutlineSnapshot | undefined,
    position: number,
    newer: () => Promise<StoredMessage[]>,
  ): Promise<StoredMessage> {
    const boundary = snapshot?.boundary ?? 0;
    const count = snapshot?.count ?? 0;
    if (snapshot && position < boundary) {
      // In the outline: its leaf names where the message is stored (two reads, no scan).
      const leaf = await reader.node(thread, 0, position);
      if (!leaf) throw missing(`the leaf of message ${position}`, thread);
      if (!leaf.message) {
        throw new ApiError(
          502,
          "LEAF_WITHOUT_SOURCE",
          `the HISTORY leaf of message ${position} of '${thread}' does not name its source message; rebuild the thread with 'outline replay --thread ${thread}'`,
        );
      }
      const stored = await reader.messageAt(thread, leaf.message.seq, leaf.message.id);
      if (!stored || stored.message.id !== leaf.message.id) {
        throw missing(
          `message ${position} (id ${leaf.message.id}, seq ${leaf.message.seq})`,
          thread,
        );
      }
      return stored;
    }
    if (snapshot && position < count) {
      const seq = snapshot.tailSeqs[position - boundary];
      const stored =
        seq === undefined
          ? undefined
          : await reader.messageAt(thread, seq, snapshot.tail[position - boundary]);
      if (!stored) throw missing(`tail message ${position}`, thread);
      return stored;
    }
    const later = (await newer())[position - count];
    if (!later) throw missing(`message ${position}`, thread);
    return later;
  }

  /**
   * A summary node: from HISTORY, or, for a parent not there, its children's texts joined: a free
   * parent is never published (SPEC, "Decided since the first version"). A leaf is always there.
   */
  async function nodeOf(
    thread: string,
    level: number,
    index: number,
  ): Promise<Pick<SummaryEvent, "text" | "until"> | undefined> {
    const node = await reader.node(thread, level, index);
    if (node || level === 0) return node;
    return joinedOf(thread, level, index);
  }

  /**
   * A parent missing from HISTORY, as its children joined. Both children are read at once; a
   * missing one is joined in turn, the left first, and the right only once the left is found:
   * a subtree gone from HISTORY (purged) costs two reads a level, not one per node under it.
   */
  async function joinedOf(
    thread: string,
    level: number,
    index: number,
  ): Promise<Pick<SummaryEvent, "text" | "until"> | undefined> {
    const below = level - 1;
    const [readLeft, readRight] = await Promise.all([
      reader.node(thread, below, index * 2),
      reader.node(thread, below, index * 2 + 1),
    ]);
    const left = readLeft ?? (below > 0 ? await joinedOf(thread, below, index * 2) : undefined);
    if (!left) return undefined;
    const right =
      readRight ?? (below > 0 ? await joinedOf(thread, below, index * 2 + 1) : undefined);
    if (!right) return undefined;
    return { text: joinedText(left.text, right.text), until: right.until };
  }

  /**
   * The stored snapshot; when the parse kept is of the key's value still, that parse, asked
   * about by revision instead of read again (a turn then reads no snapshot bytes).
   */
  async function snapshotFor(
    thread: string,
  ): Promise<(StoredSnapshot & { held?: true }) | undefined> {
    const held = turns && reader.storedSnapshotSince ? cache.held(thread) : undefined;
    if (!held || !reader.storedSnapshotSince) return reader.storedSnapshot(thread);
    const { tail, tailSeqs } = held.snapshot;
    const seq = tailSeqs.at(-1);
    const id = tail.at(-1);
    const proof = seq === undefined || id === undefined ? undefined : { seq, id };
    const got = await reader.storedSnapshotSince(thread, { revision: held.revision, proof });
    if (got !== "unchanged") return got;
    return {
      bytes: held.bytes,
      revision: held.revision,
      parse: () => held.snapshot,
      held: true,
    };
  }

  /** The prompt body in chunks (Operations.promptChunks). */
  async function promptChunks(raw: RawRequest): Promise<readonly Buffer[]> {
    const args = promptArgs(raw);
    const thread = args.thread;
    // A turn's read of the messages after those held goes out with the two reads below.
    const upTo = turns?.heldUpTo(thread);
    const ahead = upTo === undefined ? undefined : reader.readAhead?.(thread, upTo);
    if (ahead) readIdEarly(thread, ahead);
    // Both read afresh on every request: they decide whether a kept body is still the answer.
    const [stored, lastSeq] = await Promise.all([
      snapshotFor(thread),
      reader.lastMessageSeq(thread),
    ]);
    if (!stored && lastSeq === 0) throw notFound(thread);
    const hit = cache.body(args, stored?.bytes, lastSeq);
    options.onPromptCache?.(hit !== undefined);
    if (hit) return hit;
    const kept = stored && cache.snapshot(thread, stored);
    const body = turns
      ? await turnBody(turns, args, kept?.snapshot, lastSeq, ahead, stored?.held === true)
      : [
          Buffer.from(
            JSON.stringify(promptOf(args, await wholeAfter(thread, kept?.snapshot, lastSeq))),
          ),
        ];
    cache.keep(args, kept?.bytes, lastSeq, body);
    return body;
  }

  return {
    async prompt(raw) {
      const args = promptArgs(raw);
      return promptOf(args, await view(args.thread));
    },

    async promptBody(raw) {
      return Buffer.concat(await promptChunks(raw));
    },

    promptChunks,

    async zoom(raw) {
      const args = zoomArgs(raw);
      const thread = args.thread;
      const snapshot = await reader.snapshot(thread);
      let newerRead: Promise<StoredMessage[]> | undefined;
      const newer = () =>
        (newerRead ??= reader
          .lastMessageSeq(thread)
          .then((last) => newerThan(thread, snapshot, last)));
      // A thread without a snapshot is all tail: its messages decide whether it exists.
      const initial = snapshot ? snapshot.count : (await newer()).length;
      if (!snapshot && initial === 0) throw notFound(thread);
      const scope: ZoomScope = {
        outline: (snapshot?.lines ?? []).map(lineRef),
        boundary: snapshot?.boundary ?? 0,
        count: initial,
      };
      const resolve = async () => {
        try {
          return resolveZoom(scope, args);
        } catch (err) {
          // Past the snapshot's end: the message may have been stored since; count those too.
          if (!snapshot || !(err instanceof ZoomError) || err.code !== "ID_PAST_END") throw err;
          const later = await newer();
          return resolveZoom({ ...scope, count: scope.count + later.length }, args);
        }
      };
      let target;
      try {
        target = await resolve();
      } catch (err) {
        if (err instanceof ZoomError) throw new ApiError(400, err.code, err.message);
        throw err;
      }
      if (target.kind === "lines") {
        const nodes = await Promise.all(target.nodes.map((n) => nodeOf(thread, n.level, n.index)));
        return {
          lines: nodes.map((node, i) => {
            const ref = target.nodes[i] as NodeRef;
            if (!node) throw missing(`node ${ref.level}:${ref.index}`, thread);
            return {
              id: ref.index * 2 ** ref.level,
              n: 2 ** ref.level,
              text: node.text,
              until: node.until,
            };
          }),
        };
      }
      const { message } = await zoomMessage(thread, snapshot, target.position, newer);
      const explicit = args.offset !== undefined || args.limit !== undefined;
      let page: Page;
      try {
        page = pageText(message.text, target.offset, target.limit, explicit);
      } catch (err) {
        if (err instanceof ZoomError) throw new ApiError(400, err.code, err.message);
        throw err;
      }
      const out: ZoomMessage = {
        id: message.id,
        position: target.position,
        from: message.from,
        to: message.to,
        role: message.role,
        at: message.at,
        text: page.text,
      };
      if (message.steps !== undefined && message.steps.length > 0) out.steps = message.steps;
      return page.note === undefined
        ? { message: out, page: page.page }
        : { message: out, page: page.page, note: page.note };
    },

    async outline(raw) {
      const thread = threadArg(raw);
      const snapshot = await reader.snapshot(thread);
      if (snapshot) return snapshot;
      // No snapshot yet (the worker has not written one): the thread is all tail, never cut.
      const { whole } = await view(thread);
      const last = whole.at(-1);
      return {
        thread,
        count: whole.length,
        boundary: 0,
        since: whole[0]?.message.at ?? null,
        cutAt: null,
        complete: true,
        bytes: 0,
        seq: last?.seq ?? 0,
        lines: [],
        tail: whole.map((m) => m.message.id),
        tailSeqs: whole.map((m) => m.seq),
        pending: { jobs: 0, cuts: 0, merging: false, held: 0 },
      };
    },

    async tools(raw) {
      const thread = threadArg(raw);
      // The tool is the same for every thread; an unknown thread still answers 404 like the rest.
      const [snapshot, lastSeq] = await Promise.all([
        reader.snapshot(thread),
        reader.lastMessageSeq(thread),
      ]);
      if (!snapshot && lastSeq === 0) throw notFound(thread);
      return toolsFor(options.search === true);
    },
  };
}
