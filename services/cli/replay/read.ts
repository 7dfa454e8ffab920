import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { threadDeletedSchema } from "../../../shared/events.ts";
import type { InfraNames } from "../../config/names.ts";
import { subjects, type Subjects } from "../../nats/subjects.ts";
import type { ChatEvent } from "./rebuild.ts";
import { parseMessage, parseSummary } from "../../../shared/validate.ts";

export interface RawEvent {
  subject: string;
  seq: number;
  data: Uint8Array;
}

/** How long a read waits for a message before deciding the stream has no more. */
const IDLE_MS = 2_000;

/**
 * Reads a stream (or the part a filter selects) once, in order, through an ordered consumer:
 * `onStart` learns how many messages there are, `onEvent` sees each. Stops at the end of what
 * was stored when it started (messages published meanwhile may be included, never waited for).
 * The consumer pulls ahead while events are applied (a fetch would wait a round trip per batch).
 */
export async function readStream(
  js: JetStreamClient,
  stream: string,
  filter: string | undefined,
  onStart: (total: number) => void,
  onEvent: (event: RawEvent) => Promise<void> | void,
): Promise<void> {
  const consumer = await js.consumers.get(stream, {
    ...(filter === undefined ? {} : { filter_subjects: filter }),
    deliver_policy: DeliverPolicy.All,
  });
  try {
    const total = (await consumer.info()).num_pending;
    onStart(total);
    if (total === 0) return;
    const messages = await consumer.consume({ max_messages: 5000 });
    // Nothing delivered for IDLE_MS while we wait: what was counted at the start was purged
    // meanwhile. Time spent applying an event (a --resummarize model call) does not count.
    let read = 0;
    let busy = false;
    let seen = -1;
    const idle = setInterval(() => {
      if (!busy && read === seen) void messages.stop();
      seen = read;
    }, IDLE_MS);
    try {
      for await (const m of messages) {
        busy = true;
        read += 1;
        const applied = onEvent({ subject: m.subject, seq: m.seq, data: m.data });
        if (applied) await applied;
        busy = false;
        // Caught up with the stream: the end of what it holds (pending counts what is left).
        if (m.info.pending === 0) break;
      }
    } finally {
      clearInterval(idle);
      messages.stop();
    }
  } finally {
    // Ordered consumers are ephemeral and expire anyway; deleting now frees the server early.
    await consumer.delete().catch(() => undefined);
  }
}

const decoder = new TextDecoder();

function json(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data)) as unknown;
  } catch {
    return undefined;
  }
}

/** The subjects of a set of names, and what each chat subject read says (a thread has two). */
interface ChatSubjects {
  s: Subjects;
  chat: Map<string, ReturnType<Subjects["parseChat"]>>;
}

const chatSubjects = new WeakMap<InfraNames, ChatSubjects>();
/** Past this many subjects the cache starts again (threads are many, their subjects two each). */
const CHAT_SUBJECTS_KEPT = 100_000;

function whereInChat(names: InfraNames, subject: string): ReturnType<Subjects["parseChat"]> {
  let known = chatSubjects.get(names);
  if (!known) chatSubjects.set(names, (known = { s: subjects(names), chat: new Map() }));
  if (known.chat.has(subject)) return known.chat.get(subject);
  const where = known.s.parseChat(subject);
  if (known.chat.size >= CHAT_SUBJECTS_KEPT) known.chat.clear();
  known.chat.set(subject, where);
  return where;
}

/**
 * A CHAT event as the worker applies it, or undefined for what the worker dead-letters (does
 * not parse, does not validate, or names another thread than its subject).
 */
export function parseChatEvent(
  names: InfraNames,
  raw: RawEvent,
): { thread: string; event: ChatEvent } | undefined {
  const where = whereInChat(names, raw.subject);
  if (!where) return undefined;
  const body = json(raw.data);
  if (where.kind === "message.created") {
    const message = parseMessage(body);
    if (!message || message.thread !== where.thread) return undefined;
    return { thread: where.thread, event: { kind: "message", message, seq: raw.seq } };
  }
  const parsed = threadDeletedSchema.safeParse(body);
  if (!parsed.success || parsed.data.thread !== where.thread) return undefined;
  return { thread: where.thread, event: { kind: "deleted", at: parsed.data.at, seq: raw.seq } };
}

/** The node texts of one thread, by level then index (numbers: no key string per lookup). */
export class NodeTextMap {
  private readonly levels: Map<number, string>[] = [];
  private count = 0;

  get(level: number, index: number): string | undefined {
    return this.levels[level]?.get(index);
  }

  set(level: number, index: number, text: string): void {
    let nodes = this.levels[level];
    if (!nodes) this.levels[level] = nodes = new Map<number, string>();
    if (!nodes.has(index)) this.count += 1;
    nodes.set(index, text);
  }

  get size(): number {
    return this.count;
  }
}

/** HISTORY texts per thread; the last event of a subject wins. */
export type HistoryTexts = Map<string, NodeTextMap>;

/** Reads the nodes of one thread (`history.<t>.>`) or of all threads into memory. */
export async function readHistory(
  js: JetStreamClient,
  names: InfraNames,
  thread: string | undefined,
  onStart: (total: number) => void = () => {},
): Promise<{ texts: HistoryTexts; invalid: number }> {
  const s = subjects(names);
  const texts: HistoryTexts = new Map();
  let invalid = 0;
  const filter = thread === undefined ? undefined : s.threadHistory(thread);
  await readStream(js, names.historyStream, filter, onStart, (raw) => {
    const node = parseSummary(json(raw.data));
    // The subject the worker publishes a node on names what its body does: a comparison is
    // cheaper than parsing the subject (anything else is parsed, and must name the same thread).
    const where =
      node && raw.subject === `${names.historyPrefix}.${node.thread}.${node.level}.${node.index}`
        ? node
        : s.parseHistory(raw.subject);
    if (!where || !node || node.thread !== where.thread) {
      invalid += 1;
      return;
    }
    let nodes = texts.get(where.thread);
    if (!nodes) texts.set(where.thread, (nodes = new NodeTextMap()));
    nodes.set(where.level, where.index, node.text);
  });
  return { texts, invalid };
}
