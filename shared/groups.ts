import { utf8Bytes } from "./bytes.ts";
import type { SummaryGroup, SummaryJob } from "./jobs.ts";

/** A group's inputs are kept under this many bytes; a bigger input goes alone. */
export const GROUP_INPUT_BYTES = 64_000;

/** Bytes a job puts in a call besides the view: its message or its two lines (and messages). */
export function inputBytes(job: SummaryJob): number {
  if (job.kind === "leaf") {
    const steps = job.message.steps;
    return (
      utf8Bytes(job.message.text) +
      (steps && steps.length > 0 ? utf8Bytes(JSON.stringify(steps) ?? "") : 0)
    );
  }
  let bytes = utf8Bytes(job.left.text) + utf8Bytes(job.right.text);
  for (const m of job.messages ?? []) bytes += utf8Bytes(m.text);
  return bytes;
}

const firstOf = (job: SummaryJob): number =>
  job.kind === "leaf" ? job.message.position : job.first;

/**
 * Splits jobs into summarizer calls: per thread, in the order of the messages they start at, at
 * most `size` jobs and `maxBytes` of inputs each; a job bigger than `maxBytes` goes alone. Each
 * group's view is its first job's (lines before it, never anything newer); the later jobs of a
 * group read the earlier ones' inputs in the call itself.
 */
export function groupJobs(
  jobs: readonly SummaryJob[],
  size: number,
  maxBytes = GROUP_INPUT_BYTES,
): SummaryGroup[] {
  const byThread = new Map<string, SummaryJob[]>();
  for (const job of jobs) {
    const list = byThread.get(job.thread);
    if (list) list.push(job);
    else byThread.set(job.thread, [job]);
  }
  const groups: SummaryGroup[] = [];
  for (const list of byThread.values()) {
    const sorted = [...list].sort((a, b) => firstOf(a) - firstOf(b) || a.level - b.level);
    let current: SummaryJob[] = [];
    let bytes = 0;
    const close = () => {
      const first = current[0];
      if (first) {
        groups.push({
          thread: first.thread,
          line: first.line,
          context: first.context,
          jobs: current,
        });
      }
      current = [];
      bytes = 0;
    };
    for (const job of sorted) {
      const b = inputBytes(job);
      if (current.length >= Math.max(1, size) || (current.length > 0 && bytes + b > maxBytes))
        close();
      current.push(job);
      bytes += b;
    }
    close();
  }
  return groups;
}
