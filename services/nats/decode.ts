import {
  describeIssues,
  messageCreatedSchema,
  threadDeletedSchema,
  type Message,
} from "../../shared/events.ts";
import type { ChatEventKind, Subjects } from "./subjects.ts";
import { invalidUtf8Where, utf8Bytes, utf8Text } from "../../shared/bytes.ts";
// The replay's direct check of a plain message body (property-tested to answer as the schema).
import { parseMessage as plainMessage } from "../../shared/validate.ts";

/** A chat event as the worker sees it: valid, or the reason it cannot be applied. */
export type DecodedEvent =
  | { kind: "message"; message: Message }
  | { kind: "deleted"; at: string }
  | { kind: "invalid"; reason: string };

/**
 * The parser's complaint without its excerpt of the input: V8 quotes the body's first characters
 * (`Unexpected token 'S', "SECRET-lau"... is not valid JSON`), and a reason is logged, while
 * message text must never reach the logs. The bytes themselves stay in the dead letter. V8's
 * "at position N" counts UTF-16 code units of `text`: said as the byte of the body, as
 * a UTF-8 refusal says it (`data` starts `bom` bytes before `text`, a BOM the decoder dropped).
 */
function parserProblem(err: unknown, text: string, bom: number): string {
  const message = err instanceof Error ? err.message : String(err);
  return message
    .replace(/, ".*"(\.\.\.)? is not valid JSON$/s, "")
    .replace(
      / (?:in JSON )?at position (\d+)(?: \(line \d+ column \d+\))?/,
      (_, at: string) => ` at byte ${bom + utf8Bytes(text.slice(0, Number(at)))}`,
    )
    .slice(0, 200);
}

/**
 * Why `subject` is not a chat event subject, in words the publisher can act on: a bad thread id
 * token and an unknown event type are named as such (a stream wider than ours may capture both).
 */
export function chatSubjectProblem(prefix: string, subject: string): string {
  const usage = `publish on ${prefix}.<thread>.message.created or ${prefix}.<thread>.thread.deleted (README.md, "The contract")`;
  const rest = subject.startsWith(`${prefix}.`) ? subject.slice(prefix.length + 1) : undefined;
  const parts = rest?.split(".");
  if (parts?.length === 3) {
    const [thread, a, b] = parts as [string, string, string];
    const kind = `${a}.${b}`;
    if (kind !== "message.created" && kind !== "thread.deleted") {
      return `'${kind}' is not an event type outline knows; ${usage}`;
    }
    const shown = thread.length > 40 ? `${thread.slice(0, 40)}…` : thread;
    return `thread id '${shown}' in subject is ${thread.length} characters; a thread id is 1–128 characters of A-Z, a-z, 0-9, '_' or '-' (it is a subject token): use such an id for the thread`;
  }
  return `subject '${subject.slice(0, 200)}' is not a chat event subject (a thread id cannot contain '.'); ${usage}`;
}

/**
 * Parses and validates one CHAT event (SPEC §7). Never throws: anything wrong is an `invalid`
 * event whose reason says what was wrong and what the publisher should send instead. `thread` is
 * the thread the subject names (undefined when the subject is not a chat event subject).
 */
export function decodeChatEvent(
  s: Subjects,
  subject: string,
  data: Uint8Array,
): { thread: string | undefined; event: DecodedEvent } {
  const parsed = s.parseChat(subject);
  if (!parsed) {
    return {
      thread: undefined,
      event: {
        kind: "invalid",
        reason: chatSubjectProblem(s.chatPrefix, subject),
      },
    };
  }
  return {
    thread: parsed.thread,
    event: decodeChatBody(parsed.thread, parsed.kind, subject, data),
  };
}

/**
 * The body of a CHAT event whose subject is already parsed (`thread` and `kind` from
 * `Subjects.parseChat(subject)`), as `decodeChatEvent` decodes it: the worker parses each
 * subject once, to route it. A plain valid `message.created` body is accepted by a direct check
 * that builds what the schema would return (`parseMessage`, shared with the replay); anything
 * else goes to the schema, which decides and gives the reason.
 */
export function decodeChatBody(
  thread: string,
  kind: ChatEventKind,
  subject: string,
  data: Uint8Array,
): DecodedEvent {
  // Strict: a body that is not UTF-8 is refused, never applied with U+FFFD in its text.
  const text = utf8Text(data);
  if (text === undefined) return invalid(notUtf8(kind, data));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return invalid(notJson(kind, err, text, data));
  }
  if (kind === "message.created") {
    const message = plainMessage(body);
    if (message) {
      if (message.thread === thread) return { kind: "message", message };
      return invalid(wrongThread(kind, thread, message.thread, subject));
    }
  }
  const schema = kind === "message.created" ? messageCreatedSchema : threadDeletedSchema;
  const result = schema.safeParse(body);
  if (!result.success) {
    return invalid(
      `${kind} body does not match the contract (README.md, "The contract"): ${describeIssues(result.error)}`,
    );
  }
  if (result.data.thread !== thread) {
    return invalid(wrongThread(kind, thread, result.data.thread, subject));
  }
  if (kind === "thread.deleted") return { kind: "deleted", at: result.data.at };
  return { kind: "message", message: result.data as Message };
}

// Plain functions, not closures made per event: tsx names every function expression it
// compiles with a defineProperty call, a measurable cost per event.
function invalid(reason: string): DecodedEvent {
  return { kind: "invalid", reason };
}

/** Where the body stops being UTF-8, and the byte found there (a byte, never message text). */
export function notUtf8(kind: ChatEventKind, data: Uint8Array): string {
  return `${kind} body is not valid UTF-8 ${invalidUtf8Where(data)}; encode the whole body as UTF-8 (a text in Latin-1 or Windows-1252 must be converted), README.md, "The contract"`;
}

/** Well-formed UTF-8 that does not parse: what the parser found, and at which byte if it says. */
function notJson(kind: ChatEventKind, err: unknown, text: string, data: Uint8Array): string {
  const bom = data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf ? 3 : 0;
  return `${kind} body is UTF-8 but not JSON (${parserProblem(err, text, bom)}); publish one JSON object as README.md, "The contract", describes`;
}

function wrongThread(kind: ChatEventKind, thread: string, named: string, subject: string): string {
  return `${kind} body names thread '${named}' but arrived on the subject of thread '${thread}'; publish it on ${subject.replace(`.${thread}.`, `.${named}.`)}`;
}
