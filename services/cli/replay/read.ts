import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { messageCreatedSchema, threadDeletedSchema } from "../../../shared/events.ts";
import { summaryEventSchema } from "../../../shared/history.ts";
import { nodeKey } from "../../../shared/names.ts";
import type { InfraNames } from "../../config/names.ts";
import { subjects } from "../../nats/subjects.ts";
import type { ChatEvent } from "./rebuild.ts";

export interface RawEvent {
  subject: string;
  seq: number;
  data: Uint8Array;
}

/**
 * Reads a stream (or the part a filter selects) once, in order, through an ordered consumer:
 * `onStart` learns how many messages there are, `onEvent` sees each. Stops at the end of what
 * was stored when it started (messages published meanwhile may be included, never waited for).
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
    let read = 0;
    for (;;) {
      const batch = await consumer.fetch({ max_messages: 1000, expires: 2_000 });
      let got = 0;
      let end = false;
      for await (const m of batch) {
        got += 1;
        read += 1;
        await onEvent({ subject: m.subject, seq: m.seq, data: m.data });
        // The fetch would otherwise wait out its expiry for messages that will not come.
        if (m.info.pending === 0 && read >= total) {
          end = true;
          break;
        }
      }
      // Nothing more came: what was counted at the start was purged meanwhile.
      if (end || got === 0) return;
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

/**
 * A CHAT event as the worker applies it, or undefined for what the worker dead-letters (does
 * not parse, does not validate, or names another thread than its subject).
 */
export function parseChatEvent(
  names: InfraNames,
  raw: RawEvent,
): { thread: string; event: ChatEvent } | undefined {
  const where = subjects(names).parseChat(raw.subject);
  if (!where) return undefined;
  const body = json(raw.data);
  if (where.kind === "message.created") {
    const parsed = messageCreatedSchema.safeParse(body);
    if (!parsed.success || parsed.data.thread !== where.thread) return undefined;
    return { thread: where.thread, event: { kind: "message", message: parsed.data, seq: raw.seq } };
  }
  const parsed = threadDeletedSchema.safeParse(body);
  if (!parsed.success || parsed.data.thread !== where.thread) return undefined;
  return { thread: where.thread, event: { kind: "deleted", at: parsed.data.at, seq: raw.seq } };
}

/** HISTORY texts per thread, by `level:index`; the last event of a subject wins. */
export type HistoryTexts = Map<string, Map<string, string>>;

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
    const where = s.parseHistory(raw.subject);
    const parsed = summaryEventSchema.safeParse(json(raw.data));
    if (!where || !parsed.success || parsed.data.thread !== where.thread) {
      invalid += 1;
      return;
    }
    let nodes = texts.get(where.thread);
    if (!nodes) texts.set(where.thread, (nodes = new Map<string, string>()));
    nodes.set(nodeKey(where.level, where.index), parsed.data.text);
  });
  return { texts, invalid };
}
