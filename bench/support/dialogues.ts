// Multi-session conversations with questions, gold answers and evidence, in the layout REALTALK
// (bench/data/realtalk) and its predecessor use: `session_<n>` lists of `{speaker, dia_id,
// text | clean_text, date_time?}`, `session_<n>_date_time`, and `qa` entries `{question, answer,
// evidence: ["D<session>:<turn>", …], category}`. A file holds one conversation or an array of
// them, each bare or under `conversation`; `.gz` files are gunzipped.
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import type { Message } from "../../shared/events.ts";

export interface Question {
  question: string;
  answer: string;
  category: number | undefined;
  /** Positions of the evidence messages that are in the conversation, ascending. */
  evidence: number[];
}

export interface Dialogue {
  name: string;
  messages: Message[];
  questions: Question[];
}

type Json = Record<string, unknown>;

/** `dd.mm.yyyy, hh:mm:ss` (REALTALK's per-message time), else anything Date.parse reads. */
function parseTime(text: unknown): number | undefined {
  if (typeof text !== "string") return undefined;
  const dotted = /^(\d{1,2})\.(\d{1,2})\.(\d{4}),?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?/.exec(text);
  if (dotted) {
    const at = (i: number) => Number(dotted[i] ?? 0);
    return Date.UTC(at(3), at(2) - 1, at(1), at(4), at(5), at(6));
  }
  const parsed = Date.parse(text.replace(/\s+on\s+/, " "));
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** A string or number field as text, else `fallback`. */
function textOf(value: unknown, fallback: string): string {
  return typeof value === "string" || typeof value === "number" ? String(value) : fallback;
}

function dialogueOf(item: Json, index: number): Dialogue {
  const root = (item["conversation"] as Json | undefined) ?? item;
  const sessions = Object.keys(root)
    .map((key) => /^session_(\d+)$/.exec(key))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  const thread = `real-${index + 1}`;
  const messages: Message[] = [];
  const positionOf = new Map<string, number>();
  // Times only order messages here; a message without one follows the previous by a second.
  let last = Date.UTC(2020, 0, 1);
  for (const n of sessions) {
    const opens = parseTime(root[`session_${n}_date_time`]);
    if (opens !== undefined && opens > last) last = opens;
    for (const turn of (root[`session_${n}`] as Json[] | undefined) ?? []) {
      const text = textOf(turn["clean_text"] ?? turn["text"], "");
      const own = parseTime(turn["date_time"]);
      last = own !== undefined && own > last ? own : last + 1000;
      const id = textOf(turn["dia_id"], `D${n}:${messages.length}`);
      positionOf.set(id, messages.length);
      messages.push({
        id: `${thread}-${messages.length}`,
        thread,
        at: new Date(last).toISOString(),
        from: textOf(turn["speaker"], "someone"),
        role: "user",
        text,
      });
    }
  }
  const questions: Question[] = [];
  for (const qa of (item["qa"] as Json[] | undefined) ?? []) {
    const answer = textOf(qa["answer"], "");
    if (!answer) continue;
    const ids = ((qa["evidence"] as unknown[] | undefined) ?? []).flatMap(
      (e) => String(e).match(/D\d+:\d+/g) ?? [],
    );
    const evidence = [...new Set(ids.map((id) => positionOf.get(id)))]
      .filter((p): p is number => p !== undefined)
      .sort((a, b) => a - b);
    questions.push({
      question: textOf(qa["question"], ""),
      answer,
      category: typeof qa["category"] === "number" ? qa["category"] : undefined,
      evidence,
    });
  }
  const name = typeof item["file"] === "string" ? item["file"] : thread;
  return { name, messages, questions };
}

/** The conversations in `file` (JSON, or gzipped JSON when it ends in `.gz`). */
export function loadDialogues(file: string): Dialogue[] {
  const bytes = readFileSync(file);
  const json = JSON.parse((file.endsWith(".gz") ? gunzipSync(bytes) : bytes).toString("utf8")) as
    Json | Json[];
  return (Array.isArray(json) ? json : [json]).map(dialogueOf);
}
