import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import type { Message } from "../../shared/events.ts";
import type { SummaryEvent } from "../../shared/history.ts";
import type { BuiltNode, NodeStore } from "../../shared/nodes.ts";
import { isJoinedText } from "../../shared/render.ts";
import { findBuilt, type TailEntry, type ThreadState } from "../../shared/thread.ts";
import { parseSummary } from "../../shared/validate.ts";
import type { InfraNames } from "../config/names.ts";
import type { KvWrites } from "../nats/kv-writer.ts";
import { sameBytes } from "../nats/same-bytes.ts";
import { subjects } from "../nats/subjects.ts";
import { readTailMessages } from "./chat-reader.ts";
import type { HistoryNodes } from "./history-nodes.ts";

/**
 * What the worker keeps per thread in the `<kvBucket>-actors` bucket. `snapshot` is the actor's
 * `getPersistedSnapshot()` with the bulky texts stripped, so the value stays small whatever the
 * backlog: each tail message keeps only its id (the message is in CHAT at the entry's `seq`), and
 * each built node outside the outbox keeps no text (it is on HISTORY, published before the actor
 * heard of it) but a free parent, which is never published. Both are read back in parallel on
 * rehydrate. Outline lines keep their texts: they are bounded by HISTORY_OUTLINE.
 */
export interface PersistedThread {
  /** 2 keeps the tail in `tail` (columns); 1, still read, kept it in the snapshot as entries. */
  v: 1 | 2;
  thread: string;
  /** Highest CHAT sequence of this thread handled (applied, duplicate or dead-lettered). */
  seen: number;
  /** A thread.deleted was applied and its purges may not all have run: redo them on load. */
  erasing: boolean;
  snapshot: PersistedActor;
  /**
   * v2: the tail's message ids, CHAT sequences and costs, position `first` + i (the snapshot's
   * tail is empty): a third of the bytes of one object per entry, and saved many times a second.
   */
  tail?: { first: number; ids: string[]; seqs: number[]; costs: number[] };
}

/** The parts of an XState persisted snapshot the worker touches; the rest is kept as is. */
export interface PersistedActor {
  context: { core: ThreadState };
  [key: string]: unknown;
}

/** The stored record could not be used; says why and what to do. */
export class ActorStateError extends Error {
  override readonly name = "ActorStateError";
  readonly code: "STATE_TOO_LARGE" | "STATE_UNREADABLE" | "OWNERSHIP_LOST";
  constructor(code: ActorStateError["code"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

const key = (level: number, index: number) => `${level}:${index}`;

/**
 * A parent whose text is its children's joined (a free parent): never on HISTORY, so its text is
 * kept. Compared with the texts, not the line setting: a thread's line may have changed since.
 */
function isJoined(core: ThreadState, node: BuiltNode): boolean {
  if (node.level === 0) return false;
  const left = findBuilt(core, { level: node.level - 1, index: node.index * 2 });
  const right = findBuilt(core, { level: node.level - 1, index: node.index * 2 + 1 });
  return (
    left !== undefined && right !== undefined && isJoinedText(node.text, left.text, right.text)
  );
}

function stripNodes(core: ThreadState): NodeStore {
  const waiting = new Set(core.outbox.map((n) => key(n.level, n.index)));
  return core.nodes.map((level) => ({
    base: level.base,
    items: level.items.map((node) =>
      node && !waiting.has(key(node.level, node.index)) && !isJoined(core, node)
        ? { ...node, text: "" }
        : node,
    ),
  }));
}

/** The persisted record of an actor snapshot, tail messages and node texts stripped. */
export function toPersisted(
  thread: string,
  seen: number,
  erasing: boolean,
  snapshot: PersistedActor,
): PersistedThread {
  // The last step's effects ran before the save: never stored (machines/thread.ts).
  const { effects: _ran, ...context } = snapshot.context as {
    core: ThreadState;
    effects?: unknown;
  };
  const core = context.core;
  const n = core.tail.length;
  const ids = new Array<string>(n);
  const seqs = new Array<number>(n);
  const costs = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const entry = core.tail[i] as TailEntry;
    ids[i] = entry.message.id;
    seqs[i] = entry.seq;
    costs[i] = entry.cost;
  }
  return {
    v: 2,
    thread,
    seen,
    erasing,
    tail: { first: core.tail[0]?.position ?? core.boundary, ids, seqs, costs },
    snapshot: {
      ...snapshot,
      context: { ...context, core: { ...core, tail: [], nodes: stripNodes(core) } },
    },
  };
}

export function parsePersisted(thread: string, bytes: Uint8Array, bucket: string): PersistedThread {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new ActorStateError(
      "STATE_UNREADABLE",
      `actor state of thread '${thread}' in bucket ${bucket} is not JSON (${(err as Error).message}); delete the key ('nats kv del ${bucket} ${thread}') to rebuild the thread from CHAT and HISTORY`,
    );
  }
  const record = value as Partial<PersistedThread>;
  const unreadable = (what: string) =>
    new ActorStateError(
      "STATE_UNREADABLE",
      `actor state of thread '${thread}' in bucket ${bucket} ${what}; delete the key ('nats kv del ${bucket} ${thread}') to rebuild the thread from CHAT and HISTORY`,
    );
  if (
    (record?.v !== 1 && record?.v !== 2) ||
    record.thread !== thread ||
    !record.snapshot?.context?.core
  ) {
    throw unreadable("is not a version-1 or version-2 record for this thread");
  }
  if (record.v === 2) {
    const tail = record.tail;
    const n = tail?.ids.length ?? -1;
    if (!tail || tail.seqs.length !== n || tail.costs.length !== n) {
      throw unreadable("is a version-2 record without a whole tail");
    }
    // Back to entries with the message reduced to its id, as restoreRecord reads them.
    record.snapshot.context.core.tail = tail.ids.map((id, i) => ({
      message: { id } as Message,
      position: tail.first + i,
      seq: tail.seqs[i] as number,
      cost: tail.costs[i] as number,
    }));
  }
  return record as PersistedThread;
}

/**
 * Puts the stripped texts back: every tail message read from CHAT by sequence, every node text
 * from HISTORY by subject, all in parallel.
 */
export async function restoreRecord(
  jsm: JetStreamManager,
  names: InfraNames,
  history: HistoryNodes,
  record: PersistedThread,
  bucket: string,
): Promise<PersistedActor> {
  const core = record.snapshot.context.core;
  const stripped: BuiltNode[] = [];
  for (const level of core.nodes)
    for (const node of level.items) if (node?.text === "") stripped.push(node);
  const [messages, texts] = await Promise.all([
    readTailMessages(
      jsm,
      names,
      core.tail.map((entry) => ({ id: entry.message.id, seq: entry.seq })),
    ),
    Promise.all(
      stripped.map(async (node) => {
        const stored =
          (await history.read(record.thread, node.level, node.index)) ??
          (await nodeFromLeader(jsm, names, record.thread, node.level, node.index));
        if (!stored) {
          throw new ActorStateError(
            "STATE_UNREADABLE",
            `summary node ${node.level}:${node.index} of thread '${record.thread}' is not on stream ${names.historyStream} (purged?), so the actor state cannot be restored; ` +
              `delete the key ('nats kv del ${bucket} ${record.thread}') to rebuild the thread from CHAT`,
          );
        }
        return [key(node.level, node.index), stored.text] as const;
      }),
    ),
  ]);
  const textOf = new Map(texts);
  const tail = core.tail.map((entry) => ({
    ...entry,
    message: (messages.get(entry.seq) as { event: { message: Message } }).event.message,
  }));
  const nodes = core.nodes.map((level) => ({
    base: level.base,
    items: level.items.map((node) =>
      node?.text === "" ? { ...node, text: textOf.get(key(node.level, node.index)) ?? "" } : node,
    ),
  }));
  return {
    ...record.snapshot,
    context: { ...record.snapshot.context, core: { ...core, tail, nodes } },
  };
}

/**
 * A node read through HISTORY's leader: the direct get that found nothing may have been answered
 * by a replica behind it (a node the thread's last owner built just before it let the thread go).
 */
async function nodeFromLeader(
  jsm: JetStreamManager,
  names: InfraNames,
  thread: string,
  level: number,
  index: number,
): Promise<SummaryEvent | undefined> {
  const stored = await jsm.streams.getMessage(names.historyStream, {
    last_by_subj: subjects(names).historyNode(thread, level, index),
  });
  if (!stored) return undefined;
  try {
    return parseSummary(stored.json());
  } catch {
    return undefined;
  }
}

const encoder = new TextEncoder();

// KV puts carry headers and a subject besides the value; keep clear of the limit.
const ENVELOPE_BYTES = 1_024;

/**
 * Writes the record fenced on the revision last seen: `revision` 0 creates the key. Returns the
 * new revision. A stale revision means another worker took the thread over (OWNERSHIP_LOST); a
 * value over the server's max_payload is STATE_TOO_LARGE. Other errors are the caller's to retry.
 */
export async function saveRecord(
  kv: KvWrites,
  bucket: string,
  record: PersistedThread,
  revision: number,
  maxPayload: number,
): Promise<number> {
  const bytes = encoder.encode(JSON.stringify(record));
  if (bytes.length + ENVELOPE_BYTES > maxPayload) {
    throw new ActorStateError(
      "STATE_TOO_LARGE",
      `actor state of thread '${record.thread}' is ${bytes.length} bytes, over the server's max_payload of ${maxPayload} bytes: ` +
        `raise max_payload in nats-server.conf (e.g. max_payload: 8MB) or lower HISTORY_OUTLINE and HISTORY_LINE`,
    );
  }
  try {
    return revision === 0
      ? await kv.create(record.thread, bytes)
      : await kv.update(record.thread, bytes, revision);
  } catch (err) {
    if (
      err instanceof JetStreamApiError &&
      err.code === JetStreamApiCodes.StreamWrongLastSequence
    ) {
      // A retry after a lost reply finds its own write: that is success, not another writer.
      const current = await kv.get(record.thread);
      if (current?.operation === "PUT" && sameBytes(current.value, bytes)) return current.revision;
      throw new ActorStateError(
        "OWNERSHIP_LOST",
        `actor state of thread '${record.thread}' in bucket ${bucket} was written by someone else (expected revision ${revision}); this worker gives the thread up and its unacknowledged events are redelivered to the owner`,
        { cause: err },
      );
    }
    throw err;
  }
}
