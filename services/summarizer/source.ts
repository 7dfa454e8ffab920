import { foldNewlines, utf8Bytes } from "../../shared/bytes.ts";
import type { Message } from "../../shared/events.ts";
import type { SummaryJob } from "../../shared/jobs.ts";

/** `from → to`, or `from` alone: who said it, the head every leaf line starts with. */
export function renderWho(message: Pick<Message, "from" | "to">): string {
  return message.to ? `${message.from} → ${message.to}` : message.from;
}

/** A message as its leaf's source (SPEC §4.3): `from → to: text`, newlines as spaces. */
export function renderSource(message: Pick<Message, "from" | "to" | "text">): string {
  return foldNewlines(`${renderWho(message)}: ${message.text}`);
}

function stepName(step: Record<string, unknown>): string | undefined {
  const fn = step["function"];
  if (fn && typeof fn === "object" && typeof (fn as Record<string, unknown>)["name"] === "string") {
    return (fn as Record<string, unknown>)["name"] as string;
  }
  for (const key of ["tool", "name", "type", "command"]) {
    const value = step[key];
    if (typeof value === "string" && value.length > 0) return value;
  }
  return undefined;
}

/**
 * One tool step in a few words, `name(args)`. Steps are opaque to the contract (`unknown[]`), so
 * this reads the shapes platforms commonly use and falls back to compact JSON.
 */
export function describeStep(step: unknown): string {
  if (typeof step === "string") return foldNewlines(step);
  if (!step || typeof step !== "object") return JSON.stringify(step) ?? String(step);
  const record = step as Record<string, unknown>;
  const name = stepName(record);
  const fn = record["function"] as Record<string, unknown> | undefined;
  const args = record["args"] ?? record["arguments"] ?? record["input"] ?? fn?.["arguments"];
  const argText = args === undefined ? "" : typeof args === "string" ? args : JSON.stringify(args);
  if (name === undefined) return foldNewlines(JSON.stringify(step) ?? "");
  return foldNewlines(argText ? `${name}(${argText})` : name);
}

/** Bytes of what a job's line replaces: a summary is only worth its size if it is smaller. */
export function sourceBytes(job: SummaryJob): number {
  if (job.kind === "merge") return utf8Bytes(`${job.left.text} / ${job.right.text}`);
  const steps = job.message.steps;
  const stepBytes = steps && steps.length > 0 ? utf8Bytes(JSON.stringify(steps) ?? "") : 0;
  return utf8Bytes(renderSource(job.message)) + stepBytes;
}
