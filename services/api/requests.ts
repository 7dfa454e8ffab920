import { z } from "zod";
import { ZoomError } from "../../shared/errors.ts";
import { THREAD_ID } from "../../shared/events.ts";
import { wholeNumber } from "../../shared/zoom.ts";
import { ApiError } from "./api-error.ts";

/**
 * The arguments of each operation, checked the same way whichever transport brought them: HTTP
 * query strings give strings, NATS JSON bodies may give numbers. A bad argument is a 400 that
 * names the argument and what to send instead.
 */
export type RawRequest = Readonly<Record<string, unknown>>;

export type PromptFormat = "openai" | "anthropic";

export interface PromptArgs {
  thread: string;
  agent: string;
  from: string | undefined;
  format: PromptFormat;
}

export interface ZoomRequestArgs {
  thread: string;
  id: number;
  n: number;
  offset: number | undefined;
  limit: number | undefined;
}

const isoTime = z.iso.datetime({ offset: true });

function bad(code: string, message: string): ApiError {
  return new ApiError(400, code, message);
}

function shown(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

function optionalString(raw: RawRequest, key: string): string | undefined {
  const value = raw[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") {
    throw bad("BAD_ARGUMENT", `${key} must be a string, got ${shown(value)}`);
  }
  return value;
}

export function threadArg(raw: RawRequest): string {
  const value = raw.thread;
  if (typeof value !== "string" || !THREAD_ID.test(value)) {
    throw bad(
      "BAD_THREAD_ID",
      `thread id ${value === undefined ? "is missing" : `'${shown(value)}' is invalid`}: a thread id is 1–128 characters of A-Z, a-z, 0-9, '_' or '-'`,
    );
  }
  return value;
}

// Integers only; the rules about their values (≥ 0, power of two, …) are the core's zoom rules,
// which name the rule broken. `range`, when given, is said too (e.g. "from 1 to 100 hits").
export function integer(raw: RawRequest, key: string, range?: string): number | undefined {
  const value = raw[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (typeof value === "string" && /^-?\d{1,20}$/.test(value)) return Number(value);
  throw bad(
    "NOT_A_NUMBER",
    `${key} must be a whole number${range ? ` ${range}` : ""}, got '${shown(value)}'`,
  );
}

/** A page size (`limit`): from 1 to `max` of `unit`, `fallback` when not given. */
export function limitArg(raw: RawRequest, fallback: number, max: number, unit: string): number {
  const range = `from 1 to ${max} ${unit}`;
  const limit = integer(raw, "limit", range) ?? fallback;
  if (limit < 1 || limit > max) throw bad("BAD_LIMIT", `limit is ${range}, got ${limit}`);
  return limit;
}

/**
 * A page's cursor (`before`: the previous page's answer, `what` it counts), undefined when not
 * given: a whole number, 0 or more, else a 400 naming the rule (search's hits and the
 * explorer's thread list page the same way).
 */
export function beforeArg(raw: RawRequest, what: string): number | undefined {
  const before = integer(raw, "before", "≥ 0");
  if (before !== undefined && before < 0) {
    throw bad("BAD_BEFORE", `before is ${what}, 0 or more; got ${before}`);
  }
  return before;
}

/**
 * A page's start (`offset`), 0 when not given: checked by the rule zoom pages a message by, so a
 * negative one is the same 400 BAD_PAGE ("offset must be a whole number ≥ 0") wherever it is sent.
 */
export function offsetArg(raw: RawRequest): number {
  try {
    return wholeNumber("offset", integer(raw, "offset"), 0);
  } catch (err) {
    if (err instanceof ZoomError) throw bad(err.code, err.message);
    throw err;
  }
}

export function promptArgs(raw: RawRequest): PromptArgs {
  const thread = threadArg(raw);
  const agent = optionalString(raw, "agent") ?? "";
  if (agent.length > 256) throw bad("BAD_AGENT", "agent is at most 256 characters");
  const from = optionalString(raw, "from");
  if (from !== undefined && !isoTime.safeParse(from).success) {
    throw bad(
      "BAD_FROM",
      `from must be an ISO-8601 date-time with an offset, e.g. 2026-11-30T08:15:00Z; got '${shown(from)}'`,
    );
  }
  const format = optionalString(raw, "format") ?? "openai";
  if (format !== "openai" && format !== "anthropic") {
    throw bad("BAD_FORMAT", `format must be 'openai' or 'anthropic', got '${shown(format)}'`);
  }
  return { thread, agent, from, format };
}

export function zoomArgs(raw: RawRequest): ZoomRequestArgs {
  const thread = threadArg(raw);
  const id = integer(raw, "id");
  const n = integer(raw, "n");
  if (id === undefined || n === undefined) {
    throw bad(
      "MISSING_ARGUMENT",
      `zoom needs id and n, e.g. id=8&n=4 to open line 8+4, or id=9&n=1 for message 9 whole`,
    );
  }
  return { thread, id, n, offset: integer(raw, "offset"), limit: integer(raw, "limit") };
}
