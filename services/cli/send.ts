import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
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
      for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
        if (line.trim() === "") continue;
        await publish(session, message(fields, line, `cli-${randomUUID()}`), out);
      }
      return 0;
    });
  },
};
