// Cheaper validation for bulk reads (the replay, the worker's decoder). Events written by the
// platform and the worker are almost always plain and valid: a direct check accepts those and
// builds exactly what the zod schema would return (same keys, same order, same values). Anything
// it is not certain of (an unknown key, an unusual time format, a wrong type) goes to the schema,
// which decides and gives the reason. So the replay applies and skips the same events as the
// worker, at a fraction of the cost.
import { messageCreatedSchema, THREAD_ID, type Message, type Role } from "./events.ts";
import { summaryEventSchema, type SummaryEvent } from "./history.ts";

type Body = Record<string, unknown>;

const isBody = (v: unknown): v is Body => typeof v === "object" && v !== null && !Array.isArray(v);

const MESSAGE_KEYS = new Set([
  "id",
  "thread",
  "at",
  "from",
  "to",
  "role",
  "text",
  "state",
  "steps",
]);
const SUMMARY_KEYS = new Set(["thread", "level", "index", "text", "until", "by", "message"]);
const MESSAGE_SOURCE_KEYS = new Set(["id", "seq"]);
const ROLES = new Set<unknown>(["user", "assistant", "tool", "system"]);

function onlyKeys(body: Body, known: ReadonlySet<string>): boolean {
  for (const key in body) if (!known.has(key)) return false;
  return true;
}

/** 1–max UTF-16 units: within the schema's 1–max code points. */
const shortString = (v: unknown, max: number, min = 1): v is string =>
  typeof v === "string" && v.length >= min && v.length <= max;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The number written by the digits at [from, from + n) of `v`, or -1 if one is not a digit. */
function digits(v: string, from: number, n: number): number {
  let out = 0;
  for (let i = from; i < from + n; i++) {
    const d = v.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    out = out * 10 + d;
  }
  return out;
}

/**
 * The canonical ISO form `YYYY-MM-DDTHH:mm:ss.sssZ` of a real date and time (what `toISOString`
 * writes, and what the schema's ISO-8601 rule accepts); other valid forms go to the schema.
 */
function canonicalTime(v: unknown): v is string {
  if (typeof v !== "string" || v.length !== 24) return false;
  if (v[4] !== "-" || v[7] !== "-" || v[10] !== "T" || v[13] !== ":" || v[16] !== ":") return false;
  if (v[19] !== "." || v[23] !== "Z" || digits(v, 20, 3) < 0) return false;
  const year = digits(v, 0, 4);
  const month = digits(v, 5, 2);
  const day = digits(v, 8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : (DAYS[month - 1] as number))) return false;
  const hour = digits(v, 11, 2);
  const minute = digits(v, 14, 2);
  const second = digits(v, 17, 2);
  return hour >= 0 && hour <= 23 && minute >= 0 && minute <= 59 && second >= 0 && second <= 59;
}

const wholeNumber = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** A `message.created` body as `messageCreatedSchema` parses it, or undefined when invalid. */
export function parseMessage(body: unknown): Message | undefined {
  if (
    isBody(body) &&
    onlyKeys(body, MESSAGE_KEYS) &&
    shortString(body.id, 256) &&
    typeof body.thread === "string" &&
    THREAD_ID.test(body.thread) &&
    canonicalTime(body.at) &&
    shortString(body.from, 256) &&
    (body.to === undefined || shortString(body.to, 256, 0)) &&
    ROLES.has(body.role) &&
    typeof body.text === "string" &&
    (body.steps === undefined || Array.isArray(body.steps))
  ) {
    const message: Message = {
      id: body.id,
      thread: body.thread,
      at: body.at,
      from: body.from,
      ...(body.to === undefined ? {} : { to: body.to }),
      role: body.role as Role,
      text: body.text,
      ...("state" in body ? { state: body.state } : {}),
      ...(body.steps === undefined ? {} : { steps: (body.steps as unknown[]).slice() }),
    };
    return message;
  }
  const parsed = messageCreatedSchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}

/** A HISTORY node body as `summaryEventSchema` parses it, or undefined when invalid. */
export function parseSummary(body: unknown): SummaryEvent | undefined {
  const source = isBody(body) ? body.message : undefined;
  if (
    isBody(body) &&
    onlyKeys(body, SUMMARY_KEYS) &&
    typeof body.thread === "string" &&
    THREAD_ID.test(body.thread) &&
    wholeNumber(body.level) &&
    wholeNumber(body.index) &&
    shortString(body.text, Infinity) &&
    typeof body.until === "string" &&
    typeof body.by === "string" &&
    (source === undefined ||
      (isBody(source) &&
        onlyKeys(source, MESSAGE_SOURCE_KEYS) &&
        typeof source.id === "string" &&
        wholeNumber(source.seq)))
  ) {
    return {
      thread: body.thread,
      level: body.level,
      index: body.index,
      text: body.text,
      until: body.until,
      by: body.by,
      ...(isBody(source)
        ? { message: { id: source.id as string, seq: source.seq as number } }
        : {}),
    };
  }
  const parsed = summaryEventSchema.safeParse(body);
  return parsed.success ? parsed.data : undefined;
}
