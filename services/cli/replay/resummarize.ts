import type { JetStreamClient } from "@nats-io/jetstream";
import { cutToBytes, utf8Bytes } from "../../../shared/bytes.ts";
import type { SummaryEvent } from "../../../shared/history.ts";
import type { Summarizer, SummaryJob } from "../../../shared/jobs.ts";
import type { InfraNames } from "../../config/names.ts";
import { subjects } from "../../nats/subjects.ts";

/**
 * Builds a node HISTORY lacks with the configured summarizer and publishes it there, exactly as
 * the worker would have, so the next replay (and zoom) finds it. `until` is the time of the
 * newest message the node covers. Counts the calls: a plain replay must make none.
 */
export function createResummarizer(
  js: JetStreamClient,
  names: InfraNames,
  summarizer: Summarizer,
  until: (thread: string, position: number) => string,
): { resummarize: (job: SummaryJob) => Promise<string>; calls: () => number } {
  const s = subjects(names);
  let calls = 0;
  return {
    calls: () => calls,
    async resummarize(job) {
      calls += 1;
      let result;
      try {
        result = await summarizer.summarize(job);
      } catch (err) {
        throw new Error(
          `summarizer ${summarizer.name} failed on node ${job.name} of '${job.thread}': ${(err as Error).message}; fix the summarizer settings (HISTORY_SUMMARIZER, OPENAI_*) and rerun`,
          { cause: err },
        );
      }
      if (result.text.trim() === "") {
        throw new Error(
          `summarizer ${summarizer.name} returned an empty summary for node ${job.name} of '${job.thread}'; rerun, or try another HISTORY_SUMMARIZER`,
        );
      }
      // The core keeps at most 1.25 × line bytes; HISTORY holds the node as the thread keeps it.
      const limit = Math.floor(job.line * 1.25);
      const text = utf8Bytes(result.text) > limit ? cutToBytes(result.text, limit) : result.text;
      const last = job.kind === "leaf" ? job.index : job.last;
      const event: SummaryEvent = {
        thread: job.thread,
        level: job.level,
        index: job.index,
        text,
        until: job.kind === "leaf" ? job.message.at : until(job.thread, last),
        by: summarizer.name,
        ...(job.kind === "leaf" ? { message: { id: job.message.id, seq: job.seq } } : {}),
      };
      const subject = s.historyNode(job.thread, job.level, job.index);
      const ack = await js.publish(subject, JSON.stringify(event), {
        msgID: s.historyMsgId(job.thread, job.level, job.index),
      });
      // Deleted from HISTORY within the duplicate window: the server drops the msgID as a
      // repeat, yet the node is missing, so it is stored without one.
      if (ack.duplicate) await js.publish(subject, JSON.stringify(event));
      return text;
    },
  };
}
