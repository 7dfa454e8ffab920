import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { jobFor } from "../../shared/job-view.ts";
import { messageCreatedSchema, type Message } from "../../shared/events.ts";
import type { SummaryEvent } from "../../shared/history.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { toSnapshot } from "../../shared/snapshot.ts";
import {
  appendMessage,
  boundedSummary,
  findBuilt,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../../shared/thread.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { subjects } from "../../services/nats/subjects.ts";
import { fakeSummary } from "./conversation.ts";

/** Stream, subject and bucket names no other test uses, so tests share one nats-server. */
export { uniqueNames } from "./thread-worker.ts";

/** Publishes messages to CHAT as the platform does (Nats-Msg-Id = id); returns their sequences. */
export async function publishMessages(
  js: JetStreamClient,
  names: InfraNames,
  messages: readonly Message[],
): Promise<{ message: Message; seq: number }[]> {
  const s = subjects(names);
  const out: { message: Message; seq: number }[] = [];
  for (const message of messages) {
    const ack = await js.publish(s.messageCreated(message.thread), JSON.stringify(message), {
      msgID: message.id,
    });
    out.push({ message, seq: ack.seq });
  }
  return out;
}

/** A thread's first `count` messages as CHAT stored them (published by others: an import). */
export async function storedMessages(
  jsm: JetStreamManager,
  names: InfraNames,
  thread: string,
  count: number,
): Promise<{ message: Message; seq: number }[]> {
  const log: { message: Message; seq: number }[] = [];
  for (let seq = 0; log.length < count;) {
    const stored = await jsm.direct.getMessage(names.chatStream, {
      next_by_subj: subjects(names).messageCreated(thread),
      seq: seq + 1,
    });
    if (!stored) throw new Error(`${thread}: ${log.length} of ${count} messages stored`);
    seq = stored.seq;
    log.push({ message: messageCreatedSchema.parse(stored.json()), seq });
  }
  return log;
}

/**
 * What the worker would have produced for a log, without a worker: the pure core replays it with
 * the fake summarizer, and every node the worker publishes (free leaves, "model" nodes) is kept
 * as a HISTORY event.
 */
export function replayWithNodes(
  thread: string,
  settings: CoreSettings,
  log: readonly { message: Message; seq: number }[],
): { state: ThreadState; nodes: SummaryEvent[] } {
  let s = initialThreadState(thread, settings);
  const nodes = new Map<string, SummaryEvent>();
  const keep = (e: SummaryEvent) => nodes.set(`${e.level}:${e.index}`, e);
  // A parent's newest message is its right child's (a free child is in the state, not HISTORY).
  const untilOf = (level: number, index: number) =>
    findBuilt(s, { level: level - 1, index: index * 2 + 1 })?.until;
  for (const { message, seq } of log) {
    s = appendMessage(s, message, seq).state;
    for (;;) {
      for (const free of s.outbox) {
        keep({
          thread,
          level: free.level,
          index: free.index,
          text: free.text,
          until: free.until,
          by: "free",
          ...(free.message ? { message: free.message } : {}),
        });
      }
      s = outboxPublished(s, s.outbox.length);
      const taken = takeJobs(s, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      s = taken.state;
      for (const ref of taken.started) {
        const job = jobFor(s, ref);
        const text = fakeSummary(job);
        const until = job.kind === "leaf" ? job.message.at : untilOf(ref.level, ref.index);
        if (until === undefined)
          throw new Error(`no right child recorded for ${ref.level}:${ref.index}`);
        s = summaryBuilt(s, ref, text).state;
        keep({
          thread,
          level: ref.level,
          index: ref.index,
          // The core caps an over-long text; HISTORY holds what the outline uses.
          text: boundedSummary(text, settings.line),
          until,
          by: "fake",
          ...(job.kind === "leaf" ? { message: { id: job.message.id, seq: job.seq } } : {}),
        });
      }
    }
  }
  return { state: s, nodes: [...nodes.values()] };
}

/** Writes what the worker writes: every node to HISTORY, then the snapshot to KV. */
export async function publishState(
  js: JetStreamClient,
  kv: KV,
  names: InfraNames,
  state: ThreadState,
  nodes: readonly SummaryEvent[],
): Promise<void> {
  const s = subjects(names);
  for (const node of nodes) {
    await js.publish(s.historyNode(node.thread, node.level, node.index), JSON.stringify(node), {
      msgID: s.historyMsgId(node.thread, node.level, node.index),
    });
  }
  await kv.put(state.thread, JSON.stringify(toSnapshot(state)));
}
