import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Summarizer } from "../../../shared/jobs.ts";
import { toSnapshot, type OutlineSnapshot } from "../../../shared/snapshot.ts";
import { sameThreadSettings, type ThreadSettings } from "../../../shared/settings.ts";
import { loadSettings, type Config } from "../../config/load.ts";
import { connectNats, redactUrl } from "../../nats/connect.ts";
import { withServerPartitions } from "../../nats/partition-probe.ts";
import { subjects } from "../../nats/subjects.ts";
import { createSummarizer } from "../../summarizer/index.ts";
import { kvKeys } from "../../nats/buckets.ts";
import { UsageError } from "../args.ts";
import { parseReplayArgs, REPLAY_USAGE, type ReplayArgs } from "./args.ts";
import { compareSnapshots, formatDifference } from "./compare.ts";
import { createProgress, type ProgressOutput } from "./progress.ts";
import {
  NodeTextMap,
  parseChatEvent,
  readHistory,
  readStream,
  type HistorySettings,
  type HistoryTexts,
  type StoredEvent,
  type StreamAccess,
} from "./read.ts";
import { ThreadReplay, type Resummarize } from "./rebuild.ts";
import { createResummarizer } from "./resummarize.ts";
import { rebuildSearchIndexes, searchNotRebuilt } from "./search.ts";
import { natsUrlSource } from "../../config/nats-url.ts";

export interface ReplayDeps {
  env?: Readonly<Record<string, string | undefined>>;
  /** Results and differences. */
  stdout?: ProgressOutput;
  /** Progress and errors. */
  stderr?: ProgressOutput;
  /** The summarizer --resummarize uses; by default the one HISTORY_SUMMARIZER names. */
  summarizer?: Summarizer;
}

/**
 * Exit codes: everything rebuilt and matched / a snapshot differs / an error stopped us, or a
 * search index asked for (--search) was not rebuilt.
 */
export const EXIT = { ok: 0, differs: 1, error: 2 } as const;

interface Session {
  args: ReplayArgs;
  config: Config;
  js: JetStreamClient;
  /** What the streams are read through. */
  access: StreamAccess;
  out: (line: string) => void;
  err: ProgressOutput;
}

/** CHAT events gathered before they are applied (a consumer's read batch). */
const APPLY_BATCH = 5_000;
/**
 * CHAT read ahead while HISTORY is still being read (nothing is applied before it is in): at
 * most this many events and bytes of them.
 */
const READ_AHEAD = { events: 20_000, bytes: 64 * 2 ** 20 };

/**
 * Reads CHAT and applies it, each thread's events of a batch as one transition, once `history`
 * is in: CHAT is read meanwhile (up to READ_AHEAD), so the two reads overlap.
 */
async function rebuildThreads(
  session: Session,
  history: Promise<unknown>,
  makeReplay: (thread: string) => ThreadReplay,
): Promise<Map<string, ThreadReplay>> {
  const { args, config, access, err } = session;
  const names = config.names;
  const s = subjects(names);
  const threads = new Map<string, ThreadReplay>();
  const replayOf = (thread: string): ThreadReplay => {
    let r = threads.get(thread);
    if (!r) threads.set(thread, (r = makeReplay(thread)));
    return r;
  };
  const progress = createProgress(err, "replay");
  let skipped = 0;
  // Per thread, its newest event that does not decode: the worker dead-letters it, and its
  // snapshot's seq shows it handled (ThreadReplay.passed).
  const invalid = new Map<string, number>();
  const invalidOf = (subject: string, seq: number) => {
    const where = s.parseChat(subject);
    if (where) invalid.set(where.thread, Math.max(seq, invalid.get(where.thread) ?? 0));
  };
  // Events are applied a read batch at a time, each thread's as one transition; the progress
  // counts them then too. Only a full batch makes the read wait (no promise per event).
  let pending = new Map<string, StoredEvent[]>();
  let held = 0;
  let heldBytes = 0;
  let read = 0;
  let historyIn = false;
  history.then(
    () => (historyIn = true),
    () => undefined, // awaited in flush, which reports it
  );
  const flush = async () => {
    await history;
    const batch = pending;
    pending = new Map();
    held = 0;
    heldBytes = 0;
    for (const [thread, events] of batch) await replayOf(thread).applyAll(events);
    progress.tick(read);
    read = 0;
  };
  const add = (thread: string, event: StoredEvent, bytes = 0): Promise<void> | undefined => {
    const events = pending.get(thread);
    if (events) events.push(event);
    else pending.set(thread, [event]);
    held += 1;
    heldBytes += bytes;
    if (held < APPLY_BATCH) return undefined;
    if (!historyIn && held < READ_AHEAD.events && heldBytes < READ_AHEAD.bytes) return undefined;
    return flush();
  };

  if (args.thread === undefined) {
    await readStream(
      access,
      names.chatStream,
      undefined,
      (n) => progress.total(n),
      (raw) => {
        read += 1;
        const parsed = parseChatEvent(names, raw);
        if (parsed) return add(parsed.thread, parsed.event, raw.data.length);
        skipped += 1;
        invalidOf(raw.subject, raw.seq);
        return undefined;
      },
    );
    await flush();
  } else {
    const thread = args.thread;
    // nats-server 2.9 takes one filter per consumer, so deletions (rare) are read first and
    // merged into the message stream by sequence; partitioned, so are the messages stored
    // before the partition token (docs/scale-out.md), and the partitioned form is streamed.
    const deletions: StoredEvent[] = [];
    const messageForms = s.stored(thread, "message.created");
    const streamed = messageForms[messageForms.length - 1] as string;
    const firstRead = [...s.stored(thread, "thread.deleted"), ...messageForms.slice(0, -1)];
    for (const subject of firstRead) {
      await readStream(
        access,
        names.chatStream,
        subject,
        (n) => progress.total(n),
        (raw) => {
          const parsed = parseChatEvent(names, raw);
          if (parsed) deletions.push(parsed.event);
          else {
            invalidOf(raw.subject, raw.seq);
            if (s.parseChat(raw.subject)?.kind === "message.created") skipped += 1;
          }
          progress.tick();
        },
      );
    }
    deletions.sort((a, b) => a.seq - b.seq);
    const deleted = deletions.filter((e) => e.type === "thread.deleted").length;
    let next = 0;
    await readStream(
      access,
      names.chatStream,
      streamed,
      (n) => progress.total(n + deletions.length),
      async (raw) => {
        while (next < deletions.length && (deletions[next] as StoredEvent).seq < raw.seq) {
          await add(thread, deletions[next++] as StoredEvent);
        }
        read += 1;
        const parsed = parseChatEvent(names, raw);
        if (parsed) await add(thread, parsed.event, raw.data.length);
        else {
          skipped += 1;
          invalidOf(raw.subject, raw.seq);
        }
      },
    );
    while (next < deletions.length) await add(thread, deletions[next++] as StoredEvent);
    await flush();
    // Made only now (by a flush or here): a thread's replay needs HISTORY in.
    if (replayOf(thread).state.count === 0 && deleted === 0) {
      progress.done();
      throw new UsageError(
        `thread '${thread}' has no events in stream ${names.chatStream} (OUTLINE_CHAT_STREAM); check the thread id. No outline command lists threads; the explorer does (GET /ui/ of the prompt-builder, e.g. http://127.0.0.1:8080/ui/ under npm start)`,
      );
    }
  }
  for (const [thread, seq] of invalid) threads.get(thread)?.passed(seq);
  progress.done();
  if (skipped > 0) {
    session.out(`skipped ${skipped} invalid events (the worker dead-letters them too)`);
  }
  return threads;
}

/** "1 thread", "2 threads". */
const counted = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** The variables that set a thread's settings, as a command line would. */
function settingsEnv(s: ThreadSettings): string {
  return `HISTORY_LINE=${s.line} HISTORY_TAIL=${s.tail.join(",")} HISTORY_OUTLINE=${s.outline.join(",")}`;
}

function rebuiltSnapshot(replay: ThreadReplay): OutlineSnapshot | undefined {
  // The worker removes a deleted thread's snapshot.
  return replay.state.deleted ? undefined : toSnapshot(replay.state, replay.seq);
}

async function storedSnapshot(kv: KV, thread: string): Promise<OutlineSnapshot | undefined> {
  const entry = await kv.get(thread);
  if (!entry || entry.operation !== "PUT" || entry.length === 0) return undefined;
  try {
    return entry.json<OutlineSnapshot>();
  } catch {
    return { thread, invalid: "not JSON" } as unknown as OutlineSnapshot;
  }
}

async function verify(session: Session, threads: Map<string, ThreadReplay>): Promise<number> {
  const { config, js, out } = session;
  const kv = await new Kvm(js).open(config.names.kvBucket);
  const checked = new Set<string>();
  let differing = 0;
  const otherSettings: string[] = [];
  const report = (
    thread: string,
    stored: OutlineSnapshot | undefined,
    rebuilt: OutlineSnapshot | undefined,
  ) => {
    const diffs = compareSnapshots(stored, rebuilt);
    if (diffs.length === 0) return;
    differing += 1;
    out(`thread ${thread}: ${diffs.length} difference${diffs.length === 1 ? "" : "s"}`);
    for (const d of diffs) out(formatDifference(thread, d));
    // Its log records no settings (written before they were) and this replay's differ from
    // the ones it runs under: its differences say nothing about the worker.
    const own = stored?.settings;
    const used = rebuilt?.settings;
    if (own && used && !sameThreadSettings(own, used)) {
      otherSettings.push(`${thread} (${settingsEnv(own)})`);
    }
  };
  for (const [thread, replay] of threads) {
    checked.add(thread);
    report(thread, await storedSnapshot(kv, thread), rebuiltSnapshot(replay));
  }
  if (session.args.all) {
    // A snapshot whose thread has no events left: deleted, or written by something else.
    for (const thread of await kvKeys(session.access.jsm, config.names.kvBucket)) {
      if (!checked.has(thread)) report(thread, await storedSnapshot(kv, thread), undefined);
    }
  }
  const total = checked.size;
  if (otherSettings.length > 0) {
    out(
      `verify: ${otherSettings.length} of them ran under other settings than this replay's and their log (HISTORY) records none (written before settings were recorded): verify each under its own, e.g. ${otherSettings.slice(0, 3).join("; ")}. Do not --resummarize them under other settings: the nodes built would not be the thread's`,
    );
  }
  const real = differing - otherSettings.length;
  out(
    differing === 0
      ? `verify: all ${total} thread${total === 1 ? "" : "s"} match bucket '${config.names.kvBucket}'`
      : `verify: ${differing} thread${differing === 1 ? "" : "s"} differ from bucket '${config.names.kvBucket}'${real > 0 ? `; rebuild ${real === differing ? "them" : `the ${real} replayed under their own settings`} into a fresh bucket with --into, compare, and see docs/reliability.md (a worker that applied something twice or lost it)` : ""}`,
  );
  return differing;
}

async function writeInto(session: Session, bucket: string, threads: Map<string, ThreadReplay>) {
  const kv = await new Kvm(session.js).create(bucket, {
    history: 1,
    description: "Outline snapshots rebuilt by 'outline replay --into'",
  });
  for (const [thread, replay] of threads) {
    const snapshot = rebuiltSnapshot(replay);
    if (snapshot) await kv.put(thread, JSON.stringify(snapshot));
    else await kv.delete(thread);
  }
  session.out(
    `wrote ${counted(threads.size, "snapshot")} into bucket '${bucket}' (the live bucket is untouched)`,
  );
}

function summary(
  session: Session,
  threads: Map<string, ThreadReplay>,
  calls: number,
  texts: HistoryTexts | undefined,
): void {
  let messages = 0;
  let lines = 0;
  for (const [thread, replay] of threads) {
    const st = replay.state;
    messages += st.count;
    lines += st.outline.length;
    if (session.args.thread !== undefined) {
      session.out(
        `thread ${thread}: ${st.deleted ? "deleted" : `${st.count} messages, boundary ${st.boundary}, ${st.outline.length} lines, ${st.outlineBytes} outline bytes, ${st.tail.length} in the tail, ${st.stats.cuts} cuts, ${st.stats.merges} merges, seq ${st.seq}`}`,
      );
    }
  }
  session.out(
    `rebuilt ${counted(threads.size, "thread")}: ${counted(messages, "message")}, ${counted(lines, "outline line")}; model calls: ${calls}`,
  );
  let invalid = 0;
  for (const nodes of texts?.values() ?? []) invalid += nodes.invalid;
  if (invalid > 0) {
    session.out(
      `ignored ${invalid} HISTORY event${invalid === 1 ? "" : "s"} whose body is not a summary node of its subject's thread (the worker never writes one; a node only they held was missing)`,
    );
  }
}

async function replay(session: Session, deps: ReplayDeps): Promise<number> {
  const { args, config, js, out } = session;
  if (args.into !== undefined && args.into === config.names.kvBucket) {
    throw new UsageError(
      `--into ${args.into} is the live bucket (OUTLINE_KV_BUCKET); name another bucket, e.g. --into ${args.into}-rebuilt`,
    );
  }
  // HISTORY and CHAT are read at once; CHAT is applied once HISTORY is in.
  let texts: HistoryTexts | undefined;
  let records: HistorySettings | undefined;
  const history = readHistory(session.access, config.names, args.thread).then((read) => {
    texts = read.texts;
    records = read.settings;
    let nodes = 0;
    for (const m of texts.values()) nodes += m.size;
    out(
      `HISTORY: ${counted(nodes, "node")} of ${counted(texts.size, "thread")}${read.invalid ? ` (${read.invalid} events on subjects that name no node ignored)` : ""}`,
    );
  });
  // Its failure is reported where it is awaited (rebuildThreads); never left unhandled meanwhile.
  history.catch(() => undefined);
  const threads = new Map<string, ThreadReplay>();
  let calls = () => 0;
  let resummarize: Resummarize | undefined;
  if (args.resummarize) {
    const summarizer = deps.summarizer ?? createSummarizer(config.settings, config.values);
    const r = createResummarizer(js, config.names, summarizer, (thread, position) =>
      (threads.get(thread) as ThreadReplay).atOf(position),
    );
    calls = r.calls;
    resummarize = r.resummarize;
  }
  const built = await rebuildThreads(session, history, (thread) => {
    if (!texts) throw new Error(`internal: thread '${thread}' replayed before HISTORY was read`);
    let nodes = texts.get(thread);
    if (!nodes) texts.set(thread, (nodes = new NodeTextMap(thread)));
    const r = new ThreadReplay(
      thread,
      config.settings,
      nodes,
      resummarize,
      records?.get(thread) ?? [],
    );
    threads.set(thread, r);
    return r;
  });
  summary(session, built, calls(), texts);
  if (args.into !== undefined) await writeInto(session, args.into, built);
  const searchFailure = args.search
    ? searchNotRebuilt(await rebuildSearchIndexes(session.access.nc, config.names.apiPrefix, out))
    : undefined;
  if (searchFailure !== undefined) session.err.write(`replay: ${searchFailure}\n`);
  if (args.verify && (await verify(session, built)) > 0) return EXIT.differs;
  return searchFailure !== undefined ? EXIT.error : EXIT.ok;
}

/** `outline replay …`: resolves to the exit code. */
export async function run(argv: readonly string[], deps: ReplayDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  const out = (line: string) => stdout.write(`${line}\n`);
  let nc: NatsConnection | undefined;
  try {
    const args = parseReplayArgs(argv);
    if (args.help) {
      out(REPLAY_USAGE);
      return EXIT.ok;
    }
    const config = loadSettings(deps.env ?? process.env, argv);
    for (const warning of config.warnings) stderr.write(`replay: warning: ${warning}\n`);
    const { url, from } = natsUrlSource(config);
    nc = await connectNats({
      url,
      from,
      name: "outline-replay",
      auth: config.auth,
      startupTimeoutMs: 5_000,
    });
    // Events the server's mapping stored with a partition token are replayed in that form too.
    config.names = (await withServerPartitions(nc, config.names)).names;
    out(
      `replay from ${redactUrl(url)}: streams ${config.names.chatStream} + ${config.names.historyStream}`,
    );
    const access = { nc, jsm: await jetstreamManager(nc) };
    return await replay({ args, config, js: jetstream(nc), access, out, err: stderr }, deps);
  } catch (err) {
    stderr.write(`replay: ${(err as Error).message}\n`);
    return EXIT.error;
  } finally {
    await nc?.drain().catch(() => undefined);
  }
}
