import { randomBytes } from "node:crypto";
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Message } from "../../shared/events.ts";
import { summaryEventSchema } from "../../shared/history.ts";
import type { GroupResult, GroupSummarizer, SummaryGroup, SummaryJob } from "../../shared/jobs.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { toSnapshot, type OutlineSnapshot } from "../../shared/snapshot.ts";
import { appendAll, initialThreadState } from "../../shared/thread.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { addConsumerOnLeader } from "../../services/nats/leader-consumer.ts";
import { subjects, type Subjects } from "../../services/nats/subjects.ts";
import type { MeteredSummarizer } from "../../services/summarizer/index.ts";
import { SummarizerError } from "../../services/summarizer/errors.ts";
import { noUsage, type UsageTotals } from "../../services/summarizer/usage.ts";
import { fakeSummary, hash } from "./conversation.ts";

/** Streams, subjects and buckets of their own for one test: the server is shared by the run. */
export function uniqueNames(): InfraNames {
  const id = randomBytes(4).toString("hex");
  return {
    chatStream: `CHAT_${id}`,
    chatPrefix: `chat${id}`,
    historyStream: `HISTORY_${id}`,
    historyPrefix: `history${id}`,
    deadStream: `DEAD_${id}`,
    deadSubject: `dead${id}.letters`,
    kvBucket: `outline_${id}`,
    apiPrefix: `api${id}`,
    workerDurable: `worker_${id}`,
  };
}

/** Small settings that force many cuts and merges. */
export const SMALL: CoreSettings = {
  line: 512,
  tail: [200, 400],
  outline: [2000, 4000],
  concurrency: 4,
};

/**
 * The fake summarizer of the core tests (text a pure function of the job), answering after a
 * random 0–3 ms so jobs finish out of order; `failEvery` makes every n-th call fail retryably.
 */
export class FakeSummarizer implements MeteredSummarizer {
  readonly name = "fake";
  calls = 0;
  readonly #failEvery: number;
  readonly #totals: UsageTotals = noUsage();

  constructor(options: { failEvery?: number } = {}) {
    this.#failEvery = options.failEvery ?? 0;
  }

  async summarize(job: SummaryJob, signal?: AbortSignal) {
    this.calls += 1;
    this.#totals.calls += 1;
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));
    if (signal?.aborted) throw new SummarizerError("ABORTED", "aborted", { terminal: false });
    if (this.#failEvery > 0 && this.calls % this.#failEvery === 0) {
      this.#totals.failures += 1;
      throw new SummarizerError("SERVER", "fake outage (test)", { terminal: false, status: 503 });
    }
    this.#totals.inputTokens += 10;
    this.#totals.outputTokens += 5;
    return { text: fakeSummary(job), usage: { inputTokens: 10, cachedTokens: 0, outputTokens: 5 } };
  }

  usage(): UsageTotals {
    return { ...this.#totals };
  }
}

/**
 * The fake summarizer with group calls (HISTORY_GROUP): each group call answers every node with
 * the same text as alone, except that every `dropEvery`-th node gets no line (the host must build
 * it alone) and every `failGroupEvery`-th group call fails (the host must build them one by one).
 */
export class FakeGroupSummarizer extends FakeSummarizer implements GroupSummarizer {
  groupCalls = 0;
  grouped = 0;
  readonly #dropEvery: number;
  readonly #failGroupEvery: number;

  constructor(options: { dropEvery?: number; failGroupEvery?: number } = {}) {
    super();
    this.#dropEvery = options.dropEvery ?? 0;
    this.#failGroupEvery = options.failGroupEvery ?? 0;
  }

  async summarizeGroup(group: SummaryGroup, signal?: AbortSignal): Promise<GroupResult> {
    this.groupCalls += 1;
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 4)));
    if (signal?.aborted) throw new SummarizerError("ABORTED", "aborted", { terminal: false });
    if (this.#failGroupEvery > 0 && this.groupCalls % this.#failGroupEvery === 0) {
      throw new SummarizerError("SERVER", "fake group outage (test)", { terminal: false });
    }
    const texts = group.jobs.map((job) => {
      this.grouped += 1;
      if (this.#dropEvery > 0 && this.grouped % this.#dropEvery === 0) return undefined;
      // A group's jobs carry the group's view, not their own: the fake text must not depend on it.
      return fakeSummary(job);
    });
    return { texts, calls: 1 };
  }
}

/** Text of 20 to 900 characters, a pure function of (thread, i): some lines free, some paid. */
export function messageText(thread: string, i: number): string {
  const h = hash(`${thread}:${i}`);
  const size = 20 + (h % 880);
  const words = ["alpha", "budget", "deploy", "Ana", "north", "ticket", "42", "review", "été"];
  const out: string[] = [];
  let length = 0;
  for (let k = 0; length < size; k++) {
    const word = words[(h + k * 7) % words.length] as string;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(" ");
}

export function chatMessage(thread: string, i: number): Message {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
  return {
    id: `${thread}-m${i}`,
    thread,
    at,
    from: i % 3 === 0 ? "north" : "Ana",
    role: i % 3 === 0 ? "assistant" : "user",
    text: messageText(thread, i),
    ...(i % 5 === 0 ? { state: { step: i } } : {}),
  };
}

export interface Harness {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: InfraNames;
  s: Subjects;
  snapshots: KV;
  /** Per thread: the messages as applied (first copy of each id) with their CHAT sequence. */
  log: Map<string, { message: Message; seq: number }[]>;
}

export async function harness(nc: NatsConnection, names: InfraNames): Promise<Harness> {
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  const snapshots = await new Kvm(js).open(names.kvBucket);
  return { nc, js, jsm, names, s: subjects(names), snapshots, log: new Map() };
}

const encoder = new TextEncoder();

/** Publishes a message as the platform does (Nats-Msg-Id = message id unless told otherwise). */
export async function publishMessage(
  h: Harness,
  message: Message,
  options: { msgID?: string; record?: boolean } = {},
): Promise<{ seq: number; duplicate: boolean }> {
  const ack = await h.js.publish(
    h.s.messageCreated(message.thread),
    encoder.encode(JSON.stringify(message)),
    { msgID: options.msgID ?? message.id },
  );
  if (options.record !== false && !ack.duplicate) {
    const log = h.log.get(message.thread) ?? [];
    if (!log.some((e) => e.message.id === message.id)) log.push({ message, seq: ack.seq });
    h.log.set(message.thread, log);
  }
  return { seq: ack.seq, duplicate: ack.duplicate };
}

export async function publishRaw(h: Harness, subject: string, data: Uint8Array): Promise<number> {
  return (await h.js.publish(subject, data)).seq;
}

export async function readSnapshot(h: Harness, thread: string): Promise<OutlineSnapshot | null> {
  const entry = await h.snapshots.get(thread);
  if (!entry || entry.operation !== "PUT") return null;
  return entry.json<OutlineSnapshot>();
}

/** Every summary node of a thread on HISTORY, `level:index` → text, read with a pull consumer. */
export async function readHistory(h: Harness, thread: string): Promise<Map<string, string>> {
  const nodes = new Map<string, string>();
  const filter = h.s.threadHistory(thread);
  if ((await countOn(h, h.names.historyStream, filter)) === 0) return nodes;
  // On the stream's leader: a replica a restarted server is still catching up lacks nodes.
  const placed = await addConsumerOnLeader(h.jsm, h.names.historyStream, {
    deliver_policy: DeliverPolicy.All,
    filter_subject: filter,
  });
  const consumer = h.js.consumers.getConsumerFromInfo(placed);
  const messages = await consumer.consume({ max_messages: 1_000 });
  try {
    for await (const m of messages) {
      // The thread's settings records share its HISTORY subjects (README, Settings).
      if (h.s.parseHistorySettings(m.subject)) {
        if (m.info.pending === 0) break;
        continue;
      }
      const event = summaryEventSchema.parse(m.json());
      const key = `${event.level}:${event.index}`;
      if (nodes.has(key)) throw new Error(`HISTORY holds node ${key} of ${thread} twice`);
      nodes.set(key, event.text);
      if (m.info.pending === 0) break;
    }
  } finally {
    messages.stop();
    await consumer.delete().catch(() => false);
  }
  return nodes;
}

/**
 * The pure core's snapshot on the thread's log with the summaries read back from HISTORY. A node
 * not on HISTORY stays wanted, as in a replay: the worker never built it (held for its summarizer
 * group). Were it a node a cut or a batch needs, the outline would differ and the comparison fail.
 */
export async function expectedSnapshot(
  h: Harness,
  thread: string,
  settings: CoreSettings,
): Promise<OutlineSnapshot> {
  const summaries = await readHistory(h, thread);
  const state = appendAll(initialThreadState(thread, settings), h.log.get(thread) ?? [], (ref) =>
    summaries.get(`${ref.level}:${ref.index}`),
  ).state;
  // Events passed over after its last message (dead letters, duplicate ids) are reflected too.
  return toSnapshot(state, await newestEventSeq(h, thread));
}

/** The CHAT sequence of the thread's newest stored event, applied or not (0: none). */
export async function newestEventSeq(h: Harness, thread: string): Promise<number> {
  const subjectsOf = [
    ...h.s.stored(thread, "message.created"),
    ...h.s.stored(thread, "thread.deleted"),
  ];
  const found = await Promise.all(
    subjectsOf.map((subject) =>
      h.jsm.direct.getMessage(h.names.chatStream, { last_by_subj: subject }),
    ),
  );
  return Math.max(0, ...found.map((m) => m?.seq ?? 0));
}

/**
 * True once the KV snapshot reflects the thread's newest stored event (its last message, or an
 * event passed over after it: a dead letter, a duplicate id) and nothing is outstanding.
 */
export async function isSettled(h: Harness, thread: string): Promise<boolean> {
  const log = h.log.get(thread) ?? [];
  const [snapshot, newest] = await Promise.all([
    readSnapshot(h, thread),
    newestEventSeq(h, thread),
  ]);
  return (
    snapshot !== null &&
    snapshot.count === log.length &&
    snapshot.seq === newest &&
    snapshot.pending.jobs === 0 &&
    snapshot.pending.cuts === 0 &&
    !snapshot.pending.merging
  );
}

export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/**
 * Waits until every thread is settled. A read that fails (a server of a cluster killed, its
 * streams electing leaders) counts as not settled yet; the last failure is in the timeout's error.
 */
export async function waitSettled(
  h: Harness,
  threads: string[],
  timeoutMs = 40_000,
): Promise<void> {
  let failure: unknown;
  await waitFor(
    `threads ${threads.join(", ")} to settle`,
    async () => {
      try {
        return (await Promise.all(threads.map((t) => isSettled(h, t)))).every(Boolean);
      } catch (err) {
        failure = err;
        return false;
      }
    },
    timeoutMs,
  ).catch((err: unknown) => {
    throw failure === undefined
      ? err
      : new Error(`${(err as Error).message}; last read failed: ${(failure as Error).message}`);
  });
}

/**
 * Waits for threads to settle, failing only when no snapshot of theirs was written for
 * `stallMs` (a hang) or after `capMs` in all: a slow, loaded machine is not a failure.
 */
export async function waitSettledProgressing(
  h: Harness,
  threads: string[],
  stallMs = 90_000,
  capMs = 1_500_000,
): Promise<void> {
  const started = Date.now();
  let seen = "";
  let movedAt = started;
  for (;;) {
    const entries = await Promise.all(threads.map((t) => h.snapshots.get(t)));
    const revisions = entries.map((e) => e?.revision ?? 0).join(",");
    if (revisions !== seen) [seen, movedAt] = [revisions, Date.now()];
    if ((await Promise.all(threads.map((t) => isSettled(h, t)))).every(Boolean)) return;
    const now = Date.now();
    if (now - movedAt > stallMs || now - started > capMs) {
      const why = now - movedAt > stallMs ? `no snapshot written for ${stallMs} ms` : `${capMs} ms`;
      throw new Error(`threads ${threads.join(", ")} did not settle: ${why}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Messages on a stream subject filter (0 when none). */
export async function countOn(h: Harness, stream: string, filter: string): Promise<number> {
  const info = await h.jsm.streams.info(stream, { subjects_filter: filter });
  return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
}
