import {
  DeliverPolicy,
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  type ConsumerConfig,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DEAD_LETTER_HEADERS } from "../nats/dead-letter.ts";
import { addConsumerOnLeader } from "../nats/leader-consumer.ts";
import { subjectCovers } from "../nats/stream-check.ts";
import { subjects, type Subjects } from "../nats/subjects.ts";
import { threadArg } from "../api/requests.ts";
import { parse, str, UsageError } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline dead [--thread T] [--since TIME] [--limit N] [--json] [--bytes N]

Lists the dead letters: events the worker did not apply (they did not parse or validate), oldest
first, each with when it was recorded, the subject it came on, the reason, where the whole event
is (stream and sequence) and the first bytes of the original (README: The contract).

  --thread T     only thread T's: those on its subject (<dead>.T) and those older versions put
                 on the shared subject for an event that came on T's subjects
  --since TIME   only those recorded since TIME: ISO-8601 (2026-05-01T10:00Z) or an age (90s, 15m, 2h, 7d)
  --limit N      only the newest N of those (still listed oldest first)
  --json         one JSON object per line: { time, subject, thread, reason, stream, seq, bytes, original, truncated }
  --bytes N      how much of the original to show (default 120)`;

/** One dead letter as listed. */
export interface DeadEntry {
  time: string;
  subject: string;
  thread: string | null;
  reason: string;
  stream: string | null;
  seq: number | null;
  /** The original's size as recorded (cut ones say so in `truncated`). */
  bytes: number;
  /** Its first bytes, as text. */
  original: string;
  truncated: string | null;
}

const AGE = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `--since`: an ISO time or an age before `now`. */
export function parseSince(text: string, now = Date.now()): Date {
  const age = AGE.exec(text);
  if (age) return new Date(now - Number(age[1]) * UNIT_MS[age[2] as keyof typeof UNIT_MS]);
  const time = new Date(text);
  if (Number.isNaN(time.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(text)) {
    throw new UsageError(
      `--since '${text}' is neither an ISO-8601 time (2026-05-01T10:00Z) nor an age (90s, 15m, 2h, 7d)`,
    );
  }
  return time;
}

/**
 * One letter as listed. Its thread is the one its dead-letter subject names (`<dead>.<thread>`),
 * else, for a letter on the shared subject of older versions, the thread token of the subject
 * it came on: the same rule that picks a new letter's subject.
 */
export function deadEntry(m: JsMsg, s: Subjects, keep: number): DeadEntry {
  const header = (name: string) => m.headers?.get(name) || null;
  const subject = header(DEAD_LETTER_HEADERS.subject) ?? "";
  const seq = header(DEAD_LETTER_HEADERS.seq);
  const thread =
    m.subject === s.deadLetterShared ? s.chatThread(subject) : s.parseDeadLetter(m.subject);
  return {
    time: new Date(m.info.timestampNanos / 1e6).toISOString(),
    subject,
    thread: thread ?? null,
    reason: header(DEAD_LETTER_HEADERS.reason) ?? "",
    stream: header(DEAD_LETTER_HEADERS.stream),
    seq: seq === null ? null : Number(seq),
    bytes: m.data.length,
    original: new TextDecoder().decode(m.data.subarray(0, keep)),
    truncated: header(DEAD_LETTER_HEADERS.truncated),
  };
}

/**
 * Every letter of `stream` (of `config.filter_subject` when set) there when the read starts,
 * oldest first, through a consumer on the stream's leader (a replica a restarted server is
 * catching up lacks letters), dropped when the read ends.
 */
async function* readLetters(
  nc: NatsConnection,
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig>,
): AsyncGenerator<JsMsg> {
  const placed = await addConsumerOnLeader(jsm, stream, config);
  const consumer = jetstream(nc).consumers.getConsumerFromInfo(placed);
  try {
    // In pages each asking for no more than is left: a page short of its count would wait out
    // its expiry (2 s a command) for letters to come.
    let left = placed.num_pending;
    while (left > 0) {
      const page = await consumer.fetch({ max_messages: Math.min(256, left), expires: 2_000 });
      let count = 0;
      for await (const m of page) {
        count += 1;
        // Fewer once some expired or were purged meanwhile.
        left = Math.min(left - 1, m.info.pending);
        yield m;
      }
      if (count === 0) break;
    }
  } finally {
    await consumer.delete().catch(() => false);
  }
}

/** Two reads of one stream, each oldest first, as one in stream order. */
export async function* bySeq<T extends { seq: number }>(
  a: AsyncGenerator<T> | undefined,
  b: AsyncGenerator<T> | undefined,
): AsyncGenerator<T> {
  const head = async (g: AsyncGenerator<T> | undefined): Promise<T | undefined> => {
    const r = await g?.next();
    return r === undefined || r.done === true ? undefined : r.value;
  };
  try {
    let x = await head(a);
    let y = await head(b);
    while (x !== undefined || y !== undefined) {
      if (x !== undefined && (y === undefined || x.seq < y.seq)) {
        yield x;
        x = await head(a);
      } else if (y !== undefined) {
        yield y;
        y = await head(b);
      }
    }
  } finally {
    await Promise.all([a?.return(undefined), b?.return(undefined)]);
  }
}

export function formatDead(e: DeadEntry): string[] {
  const where = e.stream !== null && e.seq !== null ? `  (${e.stream} #${e.seq})` : "";
  const shown = JSON.stringify(e.original);
  const cut = e.original.length < e.bytes ? ` (first of ${e.bytes} bytes)` : "";
  return [
    `${e.time}  ${e.subject || "(no subject)"}${where}`,
    `  reason:   ${e.reason}`,
    `  original: ${shown}${cut}${e.truncated ? `; stored cut: ${e.truncated}` : ""}`,
  ];
}

export const dead: Command = {
  name: "dead",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(
      argv,
      {
        thread: { type: "string" },
        since: { type: "string" },
        json: { type: "boolean" },
        bytes: { type: "string" },
        limit: { type: "string" },
      },
      0,
    );
    if (args.help) return out.help(USAGE);
    const since =
      str(args.values.since) === undefined ? undefined : parseSince(str(args.values.since) ?? "");
    const keep = Number(str(args.values.bytes) ?? "120");
    if (!Number.isInteger(keep) || keep < 0)
      throw new UsageError(`--bytes must be a whole number ≥ 0`);
    const limitText = str(args.values.limit);
    const limit = limitText === undefined ? undefined : Number(limitText);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
      throw new UsageError(`--limit must be a whole number ≥ 1`);
    const thread = str(args.values.thread);
    // As the API does: a bad id can have no letters (it would silently list none).
    if (thread !== undefined) threadArg({ thread });
    const json = args.values.json === true;
    return withSession(async ({ nc, config }) => {
      const stream = config.names.deadStream;
      const s = subjects(config.names);
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(stream).catch((err: unknown) => {
        // Only a stream that is not there is said so; a refusal (a user that may not read it)
        // is said as such by withSession.
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound))
          throw err;
        throw new Error(
          `stream ${stream} is not there (${err.message}); the worker creates it ('npm start'), or set NATS_URL to the server it uses`,
        );
      });
      // With --limit, the newest `limit` that match are kept while the rest stream past.
      const kept: DeadEntry[] = [];
      let matched = 0;
      const show = (entry: DeadEntry) => {
        if (json) out.line(JSON.stringify(entry));
        else for (const line of formatDead(entry)) out.line(line);
      };
      if (info.state.messages > 0) {
        // Unfiltered, the newest `limit` are the stream's last sequences: read only those.
        const startSeq =
          limit !== undefined && thread === undefined && since === undefined
            ? Math.max(info.state.first_seq, info.state.last_seq - limit + 1)
            : undefined;
        const start: Partial<ConsumerConfig> = since
          ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() }
          : startSeq !== undefined
            ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq }
            : { deliver_policy: DeliverPolicy.All };
        const read = (filter?: string) =>
          readLetters(
            nc,
            jsm,
            stream,
            filter === undefined ? start : { ...start, filter_subject: filter },
          );
        // A thread's letters: its own subject, and those older versions put on the shared one
        // (kept apart below), in stream order. A stream not yet given a subject (no worker of
        // this version started on it) is read where it captures.
        const captures = (filter: string) =>
          (info.config.subjects ?? []).some((p) => subjectCovers(p, filter));
        const letters =
          thread === undefined
            ? read()
            : bySeq(
                captures(s.deadLetterOf(thread)) ? read(s.deadLetterOf(thread)) : undefined,
                captures(s.deadLetterShared) ? read(s.deadLetterShared) : undefined,
              );
        for await (const m of letters) {
          const entry = deadEntry(m, s, keep);
          if (thread !== undefined && entry.thread !== thread) continue;
          matched += 1;
          if (limit === undefined) show(entry);
          // Trimmed in halves, not shifted one by one: linear however many stream past.
          else if (kept.push(entry) >= 2 * limit) kept.splice(0, kept.length - limit);
        }
      }
      const newest = limit === undefined ? [] : kept.slice(-limit);
      newest.forEach(show);
      const shown = limit === undefined ? matched : newest.length;
      if (!json) {
        const filters = [
          thread && `thread ${thread}`,
          since && `since ${since.toISOString()}`,
          limit !== undefined && `the newest ${limit}`,
        ].filter(Boolean);
        process.stderr.write(
          `${shown} dead letter${shown === 1 ? "" : "s"}${filters.length > 0 ? ` (${filters.join(", ")})` : ""}; ${info.state.messages} in stream ${stream}\n`,
        );
      }
      return 0;
    });
  },
};
