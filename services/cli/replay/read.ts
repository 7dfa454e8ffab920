import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { readInOrder, type RawMessage } from "../../nats/ordered-read.ts";
import { threadDeletedSchema } from "../../../shared/events.ts";
import type { InfraNames } from "../../config/names.ts";
import { subjects, type Subjects } from "../../nats/subjects.ts";
import type { ChatLogEvent } from "../../../shared/step.ts";
import { parseMessage, parseSummary } from "../../../shared/validate.ts";
import { utf8Text } from "../../../shared/bytes.ts";
import { settingsEventSchema, type SettingsEvent } from "../../../shared/history.ts";

/** One CHAT event of a thread as read, with its stream sequence. */
export type StoredEvent = ChatLogEvent & { seq: number };

/** The connection a replay reads the streams through. */
export interface StreamAccess {
  nc: NatsConnection;
  jsm: JetStreamManager;
}

/**
 * Reads a stream (or the part a filter selects) once, in order (`readInOrder`): `onStart` learns
 * how many messages there are, `onEvent` sees each, and a promise it returns is awaited before
 * the next. Pulls run ahead of what is applied, so reading and applying overlap.
 */
export function readStream(
  access: StreamAccess,
  stream: string,
  filter: string | undefined,
  onStart: (total: number) => void,
  onEvent: (event: RawMessage) => Promise<void> | void,
): Promise<void> {
  return readInOrder(
    access.nc,
    access.jsm,
    stream,
    filter === undefined ? {} : { filter },
    onStart,
    onEvent,
  );
}

const decoder = new TextDecoder();

function json(data: Uint8Array): unknown {
  return jsonOf(decoder.decode(data));
}

function jsonOf(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A CHAT body as the worker reads it: one that is not UTF-8 is refused, not given U+FFFD. */
function chatJson(data: Uint8Array): unknown {
  return jsonOf(utf8Text(data));
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
  raw: RawMessage,
): { thread: string; event: StoredEvent } | undefined {
  const where = whereInChat(names, raw.subject);
  if (!where) return undefined;
  const body = chatJson(raw.data);
  if (where.kind === "message.created") {
    const message = parseMessage(body);
    if (!message || message.thread !== where.thread) return undefined;
    return { thread: where.thread, event: { type: "message.created", message, seq: raw.seq } };
  }
  const parsed = threadDeletedSchema.safeParse(body);
  if (!parsed.success || parsed.data.thread !== where.thread) return undefined;
  return {
    thread: where.thread,
    event: { type: "thread.deleted", at: parsed.data.at, seq: raw.seq },
  };
}

/**
 * The node texts of one thread, by level then index (numbers: no key string per lookup). A node
 * read from HISTORY is kept as its event's bytes and parsed when it is first asked for: the
 * nodes the core builds itself (free nodes, about a third) are never asked, so never parsed.
 */
export class NodeTextMap {
  private readonly levels: Map<number, string | Uint8Array>[] = [];
  private count = 0;
  /** HISTORY events found not to be a node of this thread when parsed (see `textOfNode`). */
  private invalidBodies = 0;

  constructor(private readonly thread: string) {}

  get(level: number, index: number): string | undefined {
    const nodes = this.levels[level];
    const kept = nodes?.get(index);
    if (kept === undefined || typeof kept === "string") return kept;
    const text = textOfNode(kept, this.thread);
    if (text === undefined) {
      // As if never stored: the worker would not have written it.
      nodes?.delete(index);
      this.count -= 1;
      this.invalidBodies += 1;
      return undefined;
    }
    nodes?.set(index, text);
    return text;
  }

  /** A text built here (--resummarize). */
  set(level: number, index: number, text: string): void {
    this.keep(level, index, text);
  }

  /**
   * A HISTORY event's body for a node. The last valid event of a subject wins: a subject stored
   * twice (rare) has both parsed now, and an invalid later one leaves the earlier.
   */
  setStored(level: number, index: number, body: Uint8Array): void {
    if (this.levels[level]?.get(index) === undefined) {
      this.keep(level, index, body);
      return;
    }
    const text = textOfNode(body, this.thread);
    if (text === undefined) this.invalidBodies += 1;
    else this.keep(level, index, text);
  }

  private keep(level: number, index: number, value: string | Uint8Array): void {
    let nodes = this.levels[level];
    if (!nodes) this.levels[level] = nodes = new Map<number, string | Uint8Array>();
    if (!nodes.has(index)) this.count += 1;
    nodes.set(index, value);
  }

  /** Nodes held (those not yet asked for are counted as read, unparsed). */
  get size(): number {
    return this.count;
  }

  /** HISTORY events ignored so far because their body was not a node of this thread. */
  get invalid(): number {
    return this.invalidBodies;
  }
}

/** The text of a HISTORY event's body, or undefined unless it is a summary node of `thread`. */
function textOfNode(body: Uint8Array, thread: string): string | undefined {
  const node = parseSummary(json(body));
  return node?.thread === thread ? node.text : undefined;
}

/** HISTORY texts per thread; the last event of a subject wins. */
export type HistoryTexts = Map<string, NodeTextMap>;

/** The settings records of each thread, by `from` (the CHAT sequence they apply from). */
export type HistorySettings = Map<string, SettingsEvent[]>;

/**
 * Reads the nodes of one thread (`history.<t>.>`) or of all threads into memory; `invalid`
 * counts events on subjects that do not name a node (bodies are checked when asked for).
 */
export async function readHistory(
  access: StreamAccess,
  names: InfraNames,
  thread: string | undefined,
  onStart: (total: number) => void = () => {},
): Promise<{ texts: HistoryTexts; settings: HistorySettings; invalid: number }> {
  const s = subjects(names);
  const texts: HistoryTexts = new Map();
  const settings: HistorySettings = new Map();
  let invalid = 0;
  const filter = thread === undefined ? undefined : s.threadHistory(thread);
  await readStream(access, names.historyStream, filter, onStart, (raw) => {
    // Only the subject is read now; the body when the replay asks for the node.
    const where = s.parseHistory(raw.subject);
    if (!where) {
      const record = s.parseHistorySettings(raw.subject)
        ? settingsEventSchema.safeParse(json(raw.data))
        : undefined;
      if (!record?.success) {
        invalid += 1;
        return;
      }
      const list = settings.get(record.data.thread) ?? [];
      // In stream order; one `from` recorded twice (a retried write) keeps the last.
      const same = list.findIndex((e) => e.from === record.data.from);
      if (same >= 0) list.splice(same, 1);
      list.push(record.data);
      list.sort((a, b) => a.from - b.from);
      settings.set(record.data.thread, list);
      return;
    }
    let nodes = texts.get(where.thread);
    if (!nodes) texts.set(where.thread, (nodes = new NodeTextMap(where.thread)));
    nodes.setStored(where.level, where.index, raw.data);
  });
  return { texts, settings, invalid };
}
