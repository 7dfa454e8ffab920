import { createReadStream, readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { invalidUtf8Where } from "../../shared/bytes.ts";
import { describeIssues, messageCreatedSchema } from "../../shared/events.ts";
import type { InfraNames } from "../config/names.ts";
import { pipelinedPublisher, type PipelinedPublisher } from "../nats/pipelined-publish.ts";
import { subjects } from "../nats/subjects.ts";
import { openAppliedIds, type AppliedIds } from "./applied-ids.ts";
import { deletedThreadReason, openDeletedThreads, type DeletedThreads } from "./deleted-threads.ts";
import { parse, UsageError } from "./args.ts";
import type { Command } from "./command.ts";
import { createProgress, type ProgressOutput } from "./replay/progress.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline import FILE|- [--window N]

Publishes a JSONL file (or stdin with -) of message.created bodies, one per line, as the chat
platform does: to chat.<thread>.message.created with Nats-Msg-Id = the message id
(docs/import.md). A line that is not a valid body, or is for a thread the worker deleted (a
deleted thread's id takes no new messages), is reported by its number and not published; the
others are. Run it again after a failure or an interruption: a message the worker has
applied is not published again (its thread's snapshot or its id index says so), one stored
within the stream's duplicate window is not stored again, and the worker applies each message
id of a thread once, however late it comes again.

  --window N   publishes awaiting their acknowledgement at once (default 512)

Progress goes to stderr (a bar on a terminal; from stdin a count, its length is not known),
the summary to stdout. Exit code 1 when a line was bad or a publish failed, 2 when the command
line was wrong (a FILE that cannot be read).`;

/** What one import did, for its summary line. */
export interface ImportResult {
  lines: number;
  /** Stored by the stream. */
  published: number;
  /** The stream had them already (same Nats-Msg-Id within its duplicate window). */
  duplicates: number;
  /** Not published: the worker has applied their message ids (snapshot or id index). */
  applied: number;
  blank: number;
  /** Lines not published, with their numbers and why. */
  bad: { line: number; reason: string }[];
  failed: { line: number; reason: string }[];
  seconds: number;
}

export interface ImportOptions {
  nc: NatsConnection;
  names: InfraNames;
  /**
   * The file in chunks of any size: bytes (a stream without an encoding: each line is decoded
   * on its own, and one that is not UTF-8 is bad), or text already decoded (tests, the bench).
   */
  input: AsyncIterable<string | Uint8Array>;
  /** Lines expected (for the progress bar), when known beforehand. */
  expected?: number;
  window?: number;
  /** The worker's applied message ids; without it every valid line is published. */
  applied?: AppliedIds;
  /** The threads the worker deleted: their lines are bad, not published (dead letters else). */
  deleted?: DeletedThreads;
  /** `deleted` could not be read: the lines from here on are published without asking it. */
  onDeletedUnchecked?: (reason: string) => void;
  /** Where the lines go (tests); a pipelined publisher on `nc` by default. */
  publisher?: PipelinedPublisher;
  progress?: ProgressOutput;
  /** Each bad line as it is found. */
  onBad?: (line: number, reason: string) => void;
  /**
   * A message id of a thread came again on line `line` with other bytes than on line `first`:
   * the worker applies the first (SPEC §7), so this line's content is dropped.
   */
  onRepeat?: (line: number, first: number, thread: string, id: string) => void;
  /** `applied` could not be read: the lines from here on are published without asking it. */
  onUnchecked?: (reason: string) => void;
  now?: () => number;
}

/** Why a line is not a message.created body, or the body's thread, id and bytes. */
export function checkLine(
  text: string,
): { ok: true; thread: string; id: string } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  const parsed = messageCreatedSchema.safeParse(json);
  if (!parsed.success) return { ok: false, reason: describeIssues(parsed.error) };
  return { ok: true, thread: parsed.data.thread, id: parsed.data.id };
}

/** A 53-bit hash of a string (cyrb53): compact keys for the ids seen in a file. */
function hash53(text: string, seed = 0): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * Message ids remembered per import, to warn of one that comes again with other content. The
 * bound: the last 1,000,000 distinct (thread, id) pairs, each one Map entry of two numbers (a
 * 53-bit hash of thread and id; the first line's number and 20 bits of its text's hash), about
 * 60 MB at most whatever the file's size. A repeat further back is not compared; a
 * hash that collides can at worst leave a repeat unwarned (text: once in 10^6) or warn of one
 * that is not (id: once in 10^10 lines): a warning only, nothing is published differently.
 */
const REMEMBERED_IDS = 1_000_000;
const TEXT_BITS = 2 ** 20;

/** Each line's bytes as UTF-8, or an error: never a U+FFFD in place of a byte (BOMs kept). */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A valid line waiting in a batch. */
interface Valid {
  number: number;
  text: string;
  thread: string;
  id: string;
}

/**
 * Publishes the lines with up to `window` publishes in flight (one round trip per window, not per
 * message). Each valid line is published as it was written; Nats-Msg-Id is its message id. With
 * `applied`, a line whose message id the worker has applied is not published: the stream's
 * duplicate window is 2 minutes, and a copy stored after it would be read and dropped by the
 * worker but kept in CHAT. Lines go in batches of half a window, checked together, in file order.
 */
export async function importLines(options: ImportOptions): Promise<ImportResult> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const window = Math.max(1, options.window ?? 512);
  const subject = subjects(options.names);
  const encoder = new TextEncoder();
  const progress = options.progress ? createProgress(options.progress, "import", now) : undefined;
  if (options.expected !== undefined) progress?.total(options.expected);
  const result: ImportResult = {
    lines: 0,
    published: 0,
    duplicates: 0,
    applied: 0,
    blank: 0,
    bad: [],
    failed: [],
    seconds: 0,
  };
  const publisher = options.publisher ?? pipelinedPublisher(options.nc);
  let inFlight = 0;
  // Resolved when the publishes in flight fall to `wake.below`.
  let wake: { below: number; resolve: () => void } | undefined;
  const settled = () => {
    inFlight -= 1;
    progress?.tick();
    if (wake && inFlight <= wake.below) {
      wake.resolve();
      wake = undefined;
    }
  };
  const until = (below: number) =>
    inFlight <= below
      ? Promise.resolve()
      : new Promise<void>((resolve) => (wake = { below, resolve }));
  // Returns a promise only when the window is full: awaiting anything yields to the event loop.
  const publish = ({ number, text, thread, id }: Valid): Promise<void> | undefined => {
    inFlight += 1;
    publisher.publish(subject.messageCreated(thread), encoder.encode(text), id).then(
      (ack) => {
        if (ack.duplicate) result.duplicates += 1;
        else result.published += 1;
        settled();
      },
      (err: unknown) => {
        result.failed.push({ line: number, reason: (err as Error).message });
        settled();
      },
    );
    // Full: wait until half have been acknowledged, then publish the next half in one go (one
    // socket write for many; refilled one by one, the writes cost more than the rest together).
    return inFlight >= window ? until(Math.floor(window / 2)) : undefined;
  };
  let applied = options.applied;
  const isApplied = async ({ thread, id }: Valid): Promise<boolean> => {
    const index = applied;
    if (!index) return false;
    try {
      return await index.has(thread, id);
    } catch (err) {
      // Unreadable: publish, as without it (the worker still applies each id once).
      if (applied) options.onUnchecked?.((err as Error).message);
      applied = undefined;
      return false;
    }
  };
  // (thread, id) hash → first line × 2^20 + its text's hash (20 bits); see REMEMBERED_IDS.
  const seen = new Map<number, number>();
  const remember = (number: number, text: string, thread: string, id: string): void => {
    const key = hash53(`${thread}\n${id}`);
    const textHash = hash53(text, 1) % TEXT_BITS;
    const first = seen.get(key);
    if (first !== undefined) {
      // Byte for byte the same line: the plain re-run of a line, nothing lost.
      if (first % TEXT_BITS !== textHash)
        options.onRepeat?.(number, Math.floor(first / TEXT_BITS), thread, id);
      return;
    }
    if (seen.size >= REMEMBERED_IDS) seen.delete(seen.keys().next().value as number);
    seen.set(key, number * TEXT_BITS + textHash);
  };
  const hasSnapshot = async (thread: string): Promise<boolean> => {
    try {
      return (await applied?.hasSnapshot(thread)) ?? false;
    } catch {
      return false; // said by isApplied, which reads the same snapshot
    }
  };
  let deleted = options.deleted;
  const isDeleted = async ({ thread }: Valid): Promise<boolean> => {
    const threads = deleted;
    if (!threads) return false;
    try {
      // A thread with a snapshot is not deleted (or its erase is still running: the worker then
      // dead-letters the line). Only the others read a tombstone: a live thread's actor record
      // can be large, a deleted one's or none is small.
      if (await hasSnapshot(thread)) return false;
      return await threads.isDeleted(thread);
    } catch (err) {
      // Unreadable: publish, as without it (the worker dead-letters a deleted thread's line).
      if (deleted) options.onDeletedUnchecked?.((err as Error).message);
      deleted = undefined;
      return false;
    }
  };
  let batch: Valid[] = [];
  const batchSize = Math.max(1, Math.floor(window / 2));
  const flush = async (): Promise<void> => {
    const lines = batch;
    batch = [];
    // The index first: it reads each thread's snapshot, which spares most threads the tombstone
    // read. An applied line is not a deleted thread's (its erase takes the index first).
    const skip = applied ? await Promise.all(lines.map(isApplied)) : undefined;
    const gone = deleted
      ? await Promise.all(
          lines.map((line, i) => (skip?.[i] ? Promise.resolve(false) : isDeleted(line))),
        )
      : undefined;
    for (const [i, line] of lines.entries()) {
      if (gone?.[i]) {
        const reason = deletedThreadReason(line.thread);
        result.bad.push({ line: line.number, reason });
        options.onBad?.(line.number, reason);
        progress?.tick();
        continue;
      }
      if (skip?.[i]) {
        result.applied += 1;
        progress?.tick();
        continue;
      }
      const full = publish(line);
      if (full) await full;
    }
  };
  // Returns a promise only when a batch is full.
  const handle = (line: string | Uint8Array): Promise<void> | undefined => {
    const number = ++result.lines;
    let text: string;
    try {
      text = typeof line === "string" ? line : utf8.decode(line);
    } catch {
      // Not published: decoded leniently its bytes would become U+FFFD, applied as text.
      const reason = `not valid UTF-8 ${invalidUtf8Where(line as Uint8Array)}: is the file in another encoding? (convert it, e.g. iconv -f latin1 -t utf-8)`;
      result.bad.push({ line: number, reason });
      options.onBad?.(number, reason);
      progress?.tick();
      return undefined;
    }
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") {
      result.blank += 1;
      progress?.tick();
      return undefined;
    }
    const checked = checkLine(text);
    if (!checked.ok) {
      result.bad.push({ line: number, reason: checked.reason });
      options.onBad?.(number, checked.reason);
      progress?.tick();
      return undefined;
    }
    if (options.onRepeat) remember(number, text, checked.thread, checked.id);
    batch.push({ number, text, thread: checked.thread, id: checked.id });
    return batch.length >= batchSize ? flush() : undefined;
  };
  // Lines are handled a chunk at a time with no await between them unless a batch is full, and
  // a chunk's last batch goes at its end (a stream read line by line is not held back), so
  // their publishes leave in one socket write (nats.js flushes on the next microtask).
  let rest = "";
  let restBytes: Uint8Array = new Uint8Array(0);
  try {
    for await (const chunk of options.input) {
      if (typeof chunk === "string") {
        const lines = (rest + chunk).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) {
          const full = handle(line);
          if (full) await full;
        }
      } else {
        // Split on the byte '\n' (never inside a multi-byte character), then decoded per line.
        const data = restBytes.length > 0 ? Buffer.concat([restBytes, chunk]) : chunk;
        let start = 0;
        for (let end = data.indexOf(10); end >= 0; end = data.indexOf(10, start)) {
          const full = handle(data.subarray(start, end));
          start = end + 1;
          if (full) await full;
        }
        restBytes = data.subarray(start);
      }
      await flush();
    }
    if (rest !== "") await handle(rest);
    if (restBytes.length > 0) await handle(restBytes);
    await flush();
    await until(0);
  } finally {
    publisher.close();
  }
  progress?.done();
  result.failed.sort((a, b) => a.line - b.line);
  // A deleted thread's lines are found when their batch is checked, after later bad lines.
  result.bad.sort((a, b) => a.line - b.line);
  result.seconds = (now() - started) / 1000;
  return result;
}

/** The summary line. */
export function summarize(result: ImportResult, source: string): string {
  const rate =
    result.seconds > 0
      ? Math.round((result.published + result.duplicates + result.applied) / result.seconds)
      : 0;
  const parts = [
    `${result.published} published`,
    `${result.duplicates} already stored`,
    ...(result.applied > 0 ? [`${result.applied} already applied`] : []),
    `${result.bad.length} bad`,
    ...(result.failed.length > 0 ? [`${result.failed.length} failed`] : []),
    ...(result.blank > 0 ? [`${result.blank} blank`] : []),
  ];
  return `import ${source}: ${result.lines} lines: ${parts.join(", ")}; ${result.seconds.toFixed(1)} s, ${rate} msg/s`;
}

/** Why a file cannot be read, in words (Node's own message names the syscall and errno). */
function unreadable(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case "ENOENT":
      return "no such file";
    case "EISDIR":
      return "it is a directory";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    default:
      return err.message;
  }
}

/** The file's lines; a file that cannot be read is a wrong command line (exit code 2). */
function countLines(file: string): number {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${unreadable(err as NodeJS.ErrnoException)}`, {
      usage: false,
    });
  }
  let n = 0;
  for (let i = data.indexOf(10); i >= 0; i = data.indexOf(10, i + 1)) n += 1;
  return data.length > 0 && data[data.length - 1] !== 10 ? n + 1 : n;
}

export const importCommand: Command = {
  name: "import",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(argv, { window: { type: "string" } }, 1);
    if (args.help) return out.help(USAGE);
    const [source = "-"] = args.positionals;
    const windowText = args.values.window;
    const window = typeof windowText === "string" ? Number(windowText) : 512;
    if (!Number.isInteger(window) || window < 1) {
      throw new UsageError(`--window must be a whole number ≥ 1, got '${String(windowText)}'`);
    }
    const fromStdin = source === "-";
    // Opened first: a missing file is said before anything connects.
    const expected = fromStdin ? undefined : countLines(source);
    // Bytes, not text: a line that is not UTF-8 is reported, not decoded with U+FFFD.
    const input: AsyncIterable<Uint8Array> = fromStdin ? process.stdin : createReadStream(source);
    return withSession(async ({ nc, config, requireChatStream }) => {
      // Without the stream every publish would fail alike: say it once, before reading.
      await requireChatStream();
      const unchecked = (reason: string) =>
        process.stderr.write(
          `${process.stderr.isTTY ? "\r\x1b[K" : ""}could not read what the worker has applied (${reason}): the lines from here on are published without that check (each is still applied once)\n`,
        );
      const applied = await openAppliedIds(nc, config.names, unchecked);
      const deletedUnchecked = (reason: string) =>
        process.stderr.write(
          `${process.stderr.isTTY ? "\r\x1b[K" : ""}could not read which threads the worker deleted (${reason}): the lines from here on are published without that check (a deleted thread's line is dead-lettered)\n`,
        );
      const deleted = await openDeletedThreads(nc, config.names, deletedUnchecked);
      const result = await importLines({
        nc,
        names: config.names,
        input,
        window,
        ...(expected !== undefined ? { expected } : {}),
        ...(applied ? { applied } : {}),
        ...(deleted ? { deleted } : {}),
        progress: process.stderr,
        // On a terminal the bar's line is cleared first.
        onBad: (line, reason) =>
          process.stderr.write(
            `${process.stderr.isTTY ? "\r\x1b[K" : ""}line ${line}: ${reason}\n`,
          ),
        onRepeat: (line, first, thread, id) =>
          process.stderr.write(
            `${process.stderr.isTTY ? "\r\x1b[K" : ""}line ${line}: message id '${id}' of thread '${thread}' was on line ${first} with other content; line ${first}'s is kept (a message id is applied once): give this one a new id\n`,
          ),
        onUnchecked: unchecked,
        onDeletedUnchecked: deletedUnchecked,
      }).finally(() => {
        applied?.close();
        deleted?.close();
      });
      for (const f of result.failed)
        process.stderr.write(`line ${f.line}: not published: ${f.reason}\n`);
      out.line(summarize(result, fromStdin ? "stdin" : source));
      return result.bad.length > 0 || result.failed.length > 0 ? 1 : 0;
    });
  },
};
