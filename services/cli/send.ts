import { randomUUID } from "node:crypto";
import { invalidUtf8Where } from "../../shared/bytes.ts";
import { describeIssues, messageCreatedSchema, type Message } from "../../shared/events.ts";
import { subjects } from "../nats/subjects.ts";
import { parse, str, UsageError } from "./args.ts";
import type { Command, Output } from "./command.ts";
import { deletedThreadReason, openDeletedThreads } from "./deleted-threads.ts";
import { withSession, type Session } from "./session.ts";

const USAGE = `usage: outline send <thread> [<text>] [--from NAME] [--to NAME] [--role ROLE] [--id ID]

Publishes a message.created event to CHAT, as the chat platform does, with Nats-Msg-Id = the
message id (so a retry is stored once). Without <text>, each line read from stdin is one
message (blank lines are skipped), sent as it is read:
  printf 'first\\nsecond\\n' | outline send demo

stdin must be UTF-8: a line that is not stops the send (exit code 1), naming the byte where it
stops being UTF-8; it and the lines after it are not sent, those before it were.

  --from NAME   author (default: $USER, else "user")
  --to NAME     addressee, optional
  --role ROLE   user | assistant | tool | system (default: user)
  --id ID       message id (default: a new unique id); only with <text>

A thread the worker deleted takes no new messages (its id stays taken): send refuses it, exit
code 1.`;

interface Fields {
  thread: string;
  from: string;
  to: string | undefined;
  role: string;
}

/** The message as the platform would publish it, or a UsageError saying which rule it breaks. */
function message(fields: Fields, text: string, id: string): Message {
  const parsed = messageCreatedSchema.safeParse({
    id,
    thread: fields.thread,
    at: new Date().toISOString(),
    from: fields.from,
    ...(fields.to ? { to: fields.to } : {}),
    role: fields.role,
    text,
  });
  if (!parsed.success)
    throw new UsageError(`the message would not be valid: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * Throws when the worker deleted `thread` (its message would only be dead-lettered); when that
 * cannot be read, says so and lets the message go, as import does.
 */
async function refuseDeleted({ nc, config }: Session, thread: string): Promise<void> {
  const unchecked = (reason: string) =>
    process.stderr.write(
      `outline send: could not read whether thread '${thread}' was deleted (${reason}): sent without that check (a deleted thread's message is dead-lettered)\n`,
    );
  const deleted = await openDeletedThreads(nc, config.names, unchecked);
  if (!deleted) return;
  let gone = false;
  try {
    gone = await deleted.isDeleted(thread);
  } catch (err) {
    unchecked((err as Error).message);
  } finally {
    deleted.close();
  }
  if (gone) throw new Error(deletedThreadReason(thread));
}

/** Strict, BOMs kept: a line as written, never with U+FFFD in place of a byte (as import). */
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The lines of `input` as bytes, each once its '\n' is read (a byte: never inside a character). */
async function* byteLines(input: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let rest: Uint8Array = new Uint8Array(0);
  for await (const chunk of input) {
    const data = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
    let start = 0;
    for (let end = data.indexOf(10); end >= 0; end = data.indexOf(10, start)) {
      yield data.subarray(start, end);
      start = end + 1;
    }
    rest = data.subarray(start);
  }
  if (rest.length > 0) yield rest;
}

async function publish({ js, config }: Session, m: Message, out: Output): Promise<void> {
  const subject = subjects(config.names).messageCreated(m.thread);
  let ack;
  try {
    ack = await js.publish(subject, JSON.stringify(m), { msgID: m.id });
  } catch (err) {
    throw new Error(
      `could not publish to ${subject}: ${(err as Error).message}; is stream ${config.names.chatStream} there? Start the services ('npm start') or set NATS_URL to the server they use`,
      { cause: err },
    );
  }
  out.line(
    `sent ${m.id} to ${subject} (stream ${ack.stream}, seq ${ack.seq}${ack.duplicate ? ", duplicate: already stored; a changed text needs a new id" : ""})`,
  );
}

export const send: Command = {
  name: "send",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(
      argv,
      {
        from: { type: "string" },
        to: { type: "string" },
        role: { type: "string" },
        id: { type: "string" },
      },
      { min: 1, max: 2 },
    );
    if (args.help) return out.help(USAGE);
    const [thread = "", text] = args.positionals;
    const fields: Fields = {
      thread,
      from: str(args.values.from) ?? (process.env.USER || "user"),
      to: str(args.values.to),
      role: str(args.values.role) ?? "user",
    };
    const id = str(args.values.id);
    if (text !== undefined) {
      // Checked before connecting: a bad message is said at once.
      const m = message(fields, text, id ?? `cli-${randomUUID()}`);
      return withSession(async (session) => {
        await refuseDeleted(session, m.thread);
        await publish(session, m, out);
        return 0;
      });
    }
    if (id !== undefined) {
      throw new UsageError("--id names one message: give its <text>, or leave --id out for stdin");
    }
    // The fields are checked before anything is read (a bad --role fails at once).
    message(fields, "", "check");
    return withSession(async (session) => {
      // Once, before anything is read: every line would go to the same deleted thread.
      await refuseDeleted(session, thread);
      // At a terminal a forgotten <text> would look like a hang.
      if (process.stdin.isTTY)
        process.stderr.write(
          `outline send: no <text>, so each line typed is one message to '${thread}'; Ctrl-D ends\n`,
        );
      let number = 0;
      let sent = 0;
      for await (const bytes of byteLines(process.stdin as AsyncIterable<Uint8Array>)) {
        number += 1;
        let text: string;
        try {
          text = utf8.decode(bytes);
        } catch {
          // Stopped, not skipped: a thread's order is the order sent, so the rest waits for the
          // input to be fixed rather than arrive after a hole.
          throw new Error(
            `line ${number} of stdin is not valid UTF-8 ${invalidUtf8Where(bytes)}: not sent, nor the lines after it (${sent} message${sent === 1 ? " was" : "s were"} sent before it); convert the input to UTF-8 (e.g. iconv -f latin1 -t utf-8) and send from line ${number} on`,
          );
        }
        // '\r', '\r\n' and '\n' each end a line, as for readline.
        for (const line of text.split("\r")) {
          if (line.trim() === "") continue;
          await publish(session, message(fields, line, `cli-${randomUUID()}`), out);
          sent += 1;
        }
      }
      return 0;
    });
  },
};
