import { cutToBytes, foldNewlines, utf8Bytes } from "../../shared/bytes.ts";

// A model sometimes echoes the outline's `id+n|` head, wraps the line in a code fence or quotes:
// none of that is the line.
const COPIED_HEAD = /^(?:\s*\d+\s*\+\s*\d+\s*\|)+\s*/;
const FENCE = /^```[\w-]*\s*([\s\S]*?)\s*```$/;
const QUOTED = /^(["“'])([\s\S]*)(["”'])$/;

/** The line a reply holds: one line, no copied head, no fence or wrapping quotes. */
export function cleanReply(raw: string): string {
  let text = raw.trim();
  const fenced = FENCE.exec(text);
  if (fenced) text = (fenced[1] ?? "").trim();
  text = foldNewlines(text).trim().replace(COPIED_HEAD, "");
  const quoted = QUOTED.exec(text);
  if (quoted && !/["“”]/.test(quoted[2] ?? "")) text = (quoted[2] ?? "").trim();
  return text;
}

/** Marks a line cut to fit, so no reader takes its end for the whole story. */
export const CUT_SUFFIX = "…";

/** The last resort after the retries: cut on a UTF-8 character boundary, marked. */
export function cutLine(text: string, line: number): string {
  if (utf8Bytes(text) <= line) return text;
  const room = line - utf8Bytes(CUT_SUFFIX);
  if (room <= 0) return cutToBytes(text, line);
  return `${cutToBytes(text, room).trimEnd()}${CUT_SUFFIX}`;
}
