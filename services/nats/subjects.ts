import { decimalIn } from "./decimal.ts";
import { InvariantError } from "../../shared/errors.ts";
import { THREAD_ID } from "../../shared/events.ts";
import { partitionOf } from "../../shared/ownership.ts";
import type { InfraNames } from "../config/names.ts";

export type ChatEventKind = "message.created" | "thread.deleted";

export interface Subjects {
  /** `chat.<thread>.message.created` */
  messageCreated(thread: string): string;
  /** `chat.<thread>.thread.deleted` */
  threadDeleted(thread: string): string;
  /** `history.<thread>.<level>.<index>`: one summary node. */
  historyNode(thread: string, level: number, index: number): string;
  /** `thread:level:index`: the Nats-Msg-Id of a node, so a re-published node is stored once. */
  historyMsgId(thread: string, level: number, index: number): string;
  /** `history.<thread>.settings.<from>`: the settings a thread runs under from CHAT seq `from`. */
  historySettings(thread: string, from: number): string;
  /** Reads thread and `from` out of a settings subject; undefined when it is not one. */
  parseHistorySettings(subject: string): { thread: string; from: number } | undefined;
  /**
   * Every chat subject of one thread, to purge it. Not usable as a consumer filter on
   * nats-server 2.9, which wants a filter inside one stream subject: filter on
   * `messageCreated(thread)` to read a thread's messages.
   */
  threadChat(thread: string): string;
  /** Every history subject of one thread (to purge it, or read its nodes). */
  threadHistory(thread: string): string;
  /**
   * The literal subjects a thread's events of `kind` may be stored under, oldest form first: as
   * published, and in partitioned mode with the server's partition token appended
   * (docs/scale-out.md). A reader of stored events reads them all.
   */
  stored(thread: string, kind: ChatEventKind): readonly string[];
  /** The thread's partition in partitioned mode, else undefined. */
  partitionOf(thread: string): number | undefined;
  /** The filter of partition `k`'s consumer: `<chat>.*.*.*.<k>`. */
  partitionFilter(k: number): string;
  /** The filter of events stored without a partition token: `<chat>.*.*.*`. */
  readonly unpartitionedFilter: string;
  /** The first token of every chat subject. */
  readonly chatPrefix: string;
  /** The chat stream's subjects (the worker's consumer reads all of them). */
  readonly chatStreamSubjects: readonly string[];
  readonly historyStreamSubjects: readonly string[];
  /**
   * `<dead>`: the one subject every dead letter went to before they had a subject per thread.
   * Nothing is published there any more; the DEAD stream keeps capturing it so letters recorded
   * by an older version stay listed (they are not erased with their thread).
   */
  readonly deadLetterShared: string;
  /** `<dead>.<thread>`: the dead letters of one thread, purged when it is deleted. */
  deadLetterOf(thread: string): string;
  /** `<dead>.unknown.thread`: the dead letters of events whose subject names no thread. */
  readonly deadLetterNoThread: string;
  /** The thread of a `<dead>.<thread>` subject; undefined for any other subject. */
  parseDeadLetter(subject: string): string | undefined;
  /** The DEAD stream's subjects: the shared one of old, and every one under it. */
  readonly deadStreamSubjects: readonly string[];
  /**
   * The thread token of a subject under the chat prefix, `<chat>.<thread>[.…]`, whatever follows
   * (a valid event's or not); undefined when that token is not a thread id.
   */
  chatThread(subject: string): string | undefined;
  /**
   * Reads the thread and kind out of a chat subject, stored with or without a partition token
   * (`partition` then); undefined when it is not one.
   */
  parseChat(
    subject: string,
  ): { thread: string; kind: ChatEventKind; partition?: number } | undefined;
  /** Reads thread, level and index out of a history subject; undefined when it is not one. */
  parseHistory(subject: string): { thread: string; level: number; index: number } | undefined;
}

// A thread id becomes a subject token: anything else could widen a purge or a filter to
// other threads ('*', '>', '.'), so it is refused rather than escaped.
function token(thread: string): string {
  if (!THREAD_ID.test(thread)) {
    throw new InvariantError(
      "BAD_THREAD_ID",
      `thread id '${thread.slice(0, 140)}' is not 1–128 characters of A-Z, a-z, 0-9, '_' or '-'; validate events before building subjects`,
    );
  }
  return thread;
}

/**
 * The tokens after the dead-letter prefix for an event whose subject names no thread. Two tokens,
 * so no thread's subject (`<dead>.<thread>`, one token: a thread id holds no '.') can be it, nor
 * can a purge of `<dead>.<thread>` reach it; every token of it stays in the alphabet subjects are
 * configured in, which a token outside [A-Za-z0-9_-] (the only way to keep it one token) would not.
 */
export const DEAD_NO_THREAD = "unknown.thread";

/** `<chat>.<thread>[.…]`: the thread token when it is a valid thread id, else undefined. */
export function chatThreadOf(chatPrefix: string, subject: string): string | undefined {
  const start = chatPrefix.length + 1;
  if (subject.length <= start || !subject.startsWith(chatPrefix) || subject[start - 1] !== ".") {
    return undefined;
  }
  const dot = subject.indexOf(".", start);
  const thread = subject.slice(start, dot < 0 ? subject.length : dot);
  return THREAD_ID.test(thread) ? thread : undefined;
}

/**
 * The subject of the dead letter of an event that arrived on `subject`: `<dead>.<thread>` when
 * the subject names a thread (its token after the chat prefix is a valid id, whatever the rest
 * is), so the letter is erased with its thread; `<dead>.unknown.thread` otherwise.
 */
export function deadLetterSubject(
  names: Pick<InfraNames, "chatPrefix" | "deadSubject">,
  subject: string,
): string {
  const thread = chatThreadOf(names.chatPrefix, subject);
  return `${names.deadSubject}.${thread ?? DEAD_NO_THREAD}`;
}

function nodeNumber(what: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new InvariantError("BAD_NODE", `node ${what} ${n} is not a whole number ≥ 0`);
  }
  return n;
}

export function subjects(names: InfraNames): Subjects {
  const chat = names.chatPrefix;
  const history = names.historyPrefix;
  const chatDot = `${chat}.`;
  const historyDot = `${history}.`;
  let lastHistoryThread = "";
  const partitions = names.partitions;
  const stored = (thread: string, kind: ChatEventKind): readonly string[] => {
    const plain = `${chat}.${token(thread)}.${kind}`;
    return partitions === undefined
      ? [plain]
      : [plain, `${plain}.${partitionOf(thread, partitions)}`];
  };
  return {
    messageCreated: (thread) => `${chat}.${token(thread)}.message.created`,
    threadDeleted: (thread) => `${chat}.${token(thread)}.thread.deleted`,
    historyNode: (thread, level, index) =>
      `${history}.${token(thread)}.${nodeNumber("level", level)}.${nodeNumber("index", index)}`,
    historyMsgId: (thread, level, index) =>
      `${token(thread)}:${nodeNumber("level", level)}:${nodeNumber("index", index)}`,
    historySettings: (thread, from) =>
      `${history}.${token(thread)}.settings.${nodeNumber("sequence", from)}`,
    parseHistorySettings(subject) {
      if (!subject.startsWith(historyDot)) return undefined;
      const last = subject.lastIndexOf(".");
      const middle = subject.lastIndexOf(".", last - 1);
      if (middle <= historyDot.length || subject.slice(middle + 1, last) !== "settings") {
        return undefined;
      }
      const from = decimalIn(subject, last + 1, subject.length);
      const thread = subject.slice(historyDot.length, middle);
      if (from === undefined || !THREAD_ID.test(thread)) return undefined;
      return { thread, from };
    },
    threadChat: (thread) => `${chat}.${token(thread)}.>`,
    threadHistory: (thread) => `${history}.${token(thread)}.>`,
    stored,
    partitionOf: (thread) =>
      partitions === undefined ? undefined : partitionOf(token(thread), partitions),
    partitionFilter: (k) => `${chat}.*.*.*.${nodeNumber("partition", k)}`,
    unpartitionedFilter: `${chat}.*.*.*`,
    chatPrefix: chat,
    // Partitioned, the stream also captures what the server's mapping stores; the two forms
    // cannot overlap (four tokens after the prefix against three).
    chatStreamSubjects:
      partitions === undefined
        ? [`${chat}.*.message.created`, `${chat}.*.thread.deleted`]
        : [`${chat}.*.message.created`, `${chat}.*.thread.deleted`, `${chat}.*.*.*.*`],
    historyStreamSubjects: [`${history}.>`],
    deadLetterShared: names.deadSubject,
    deadLetterOf: (thread) => `${names.deadSubject}.${token(thread)}`,
    deadLetterNoThread: `${names.deadSubject}.${DEAD_NO_THREAD}`,
    parseDeadLetter(subject) {
      const prefix = `${names.deadSubject}.`;
      if (!subject.startsWith(prefix)) return undefined;
      const thread = subject.slice(prefix.length);
      return THREAD_ID.test(thread) ? thread : undefined;
    },
    // `<dead>.>` does not capture `<dead>` itself (it needs one more token): both are listed, and
    // they cannot overlap.
    deadStreamSubjects: [names.deadSubject, `${names.deadSubject}.>`],
    chatThread: (subject) => chatThreadOf(chat, subject),
    // Once per delivered event: no split, no joined string. `<prefix>.<thread>.<kind>[.<k>]`
    // where the kind (two tokens) is one of the two, the thread one token and k a partition.
    parseChat(subject) {
      if (!subject.startsWith(chatDot)) return undefined;
      const dot = subject.indexOf(".", chatDot.length);
      if (dot < 0) return undefined;
      let kind = subject.slice(dot + 1);
      let partition: number | undefined;
      if (kind !== "message.created" && kind !== "thread.deleted") {
        const last = subject.lastIndexOf(".");
        partition = decimalIn(subject, last + 1, subject.length);
        if (partition === undefined) return undefined;
        kind = subject.slice(dot + 1, last);
        if (kind !== "message.created" && kind !== "thread.deleted") return undefined;
      }
      const thread = subject.slice(chatDot.length, dot);
      if (!THREAD_ID.test(thread)) return undefined;
      return partition === undefined ? { thread, kind } : { thread, kind, partition };
    },
    // Once per HISTORY event a replay reads: `<prefix>.<thread>.<level>.<index>`, no split.
    parseHistory(subject) {
      if (!subject.startsWith(historyDot)) return undefined;
      const last = subject.lastIndexOf(".");
      const middle = subject.lastIndexOf(".", last - 1);
      if (middle <= historyDot.length) return undefined;
      const level = decimalIn(subject, middle + 1, last);
      const index = decimalIn(subject, last + 1, subject.length);
      if (level === undefined || index === undefined) return undefined;
      // A thread's nodes come in runs: the thread checked last is reused without a slice or a test.
      const known = lastHistoryThread;
      if (
        middle - historyDot.length === known.length &&
        subject.startsWith(known, historyDot.length)
      ) {
        return { thread: known, level, index };
      }
      const thread = subject.slice(historyDot.length, middle);
      if (!THREAD_ID.test(thread)) return undefined;
      lastHistoryThread = thread;
      return { thread, level, index };
    },
  };
}
