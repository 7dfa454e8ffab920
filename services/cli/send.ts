import { randomUUID } from "node:crypto";
import { describeIssues, messageCreatedSchema, type Message } from "../../shared/events.ts";
import { subjects } from "../nats/subjects.ts";
import { parse, str, UsageError } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline send <thread> <text> [--from NAME] [--to NAME] [--role ROLE] [--id ID]

Publishes one message.created event to CHAT, as the chat platform does, with
Nats-Msg-Id = the message id (so a retry is stored once).

  --from NAME   author (default: $USER, else "user")
  --to NAME     addressee, optional
  --role ROLE   user | assistant | tool | system (default: user)
  --id ID       message id (default: a new unique id)`;

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
      2,
    );
    if (args.help) return out.help(USAGE);
    const [thread = "", text = ""] = args.positionals;
    const candidate = {
      id: str(args.values.id) ?? `cli-${randomUUID()}`,
      thread,
      at: new Date().toISOString(),
      from: str(args.values.from) ?? (process.env.USER || "user"),
      ...(str(args.values.to) ? { to: str(args.values.to) } : {}),
      role: str(args.values.role) ?? "user",
      text,
    };
    const parsed = messageCreatedSchema.safeParse(candidate);
    if (!parsed.success)
      throw new UsageError(`the message would not be valid: ${describeIssues(parsed.error)}`);
    const message: Message = parsed.data;
    return withSession(async ({ js, config }) => {
      const subject = subjects(config.names).messageCreated(message.thread);
      let ack;
      try {
        ack = await js.publish(subject, JSON.stringify(message), { msgID: message.id });
      } catch (err) {
        throw new Error(
          `could not publish to ${subject}: ${(err as Error).message}; is stream ${config.names.chatStream} there? Start the services ('npm start') or set NATS_URL to the server they use`,
          { cause: err },
        );
      }
      out.line(
        `sent ${message.id} to ${subject} (stream ${ack.stream}, seq ${ack.seq}${ack.duplicate ? ", duplicate: already stored" : ""})`,
      );
      return 0;
    });
  },
};
