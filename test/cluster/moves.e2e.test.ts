import { describe, expect, it } from "vitest";
import { clusterView } from "../../services/cluster/view.ts";
import { ExtractiveSummarizer } from "../../services/summarizer/extractive.ts";
import { forgetWeighed } from "../../services/summarizer/extract/digest.ts";
import type { Message } from "../../shared/events.ts";
import { jobFor } from "../../shared/job-view.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import {
  appendMessage,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../../shared/thread.ts";
import { expectMatchesCleanRun, faultScope, ownHarness, spawnWorker } from "../faults/support.ts";
import { hash } from "../support/conversation.ts";
import { START_DEADLINE_MS } from "../support/service-process.ts";
import {
  readHistory,
  readSnapshot,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "../support/thread-worker.ts";
import { mappedNats, publishRange } from "./instance.ts";

// Issue 46: a thread's lines are a pure function of its messages, wherever they were built.
// Partitioned workers on one server with the mapping: one, a second joins, a third joins, the
// first leaves, each while messages keep coming, so threads move between workers with nodes
// built by one and merged by another, on 0, 1 and 2 summarizer threads. Then every thread's
// outline, and every node on HISTORY, equals a clean run of the same log in this process with a
// cold summarizer (nothing held, nothing weighed before).
const scope = faultScope();
const PARTITIONS = 8;
const THREADS = 24;
const STEP = 16;
/** Lines small enough that most messages need the summarizer and the outline merges often. */
const SETTINGS: CoreSettings = {
  line: 200,
  tail: [150, 300],
  outline: [1200, 2400],
  concurrency: 4,
};

const WORDS =
  "we decided to move the offsite Porto on June 14 booked can you send contract draft by Friday BILL-4821 $4,250 garden weather instead honestly nothing happened services/billing/limits.ts Zephyrine failed fixed prefers the review which and but".split(
    " ",
  );

/** Chat of every size, from a line of its own (a free leaf) to several paragraphs. */
function message(thread: string, i: number): Message {
  let h = hash(`${thread}:${i}`);
  const next = (n: number) => {
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
    return h % n;
  };
  const sentences = 1 + next(12);
  let text = "";
  for (let s = 0; s < sentences; s++) {
    const words = Array.from({ length: 3 + next(14) }, () => WORDS[next(WORDS.length)] as string);
    const said = words.join(" ");
    text += `${said.charAt(0).toUpperCase()}${said.slice(1)}${[".", "?", "!", ","][next(4)]}`;
    text += next(4) === 0 ? "\n\n" : " ";
  }
  return {
    id: `${thread}-m${i}`,
    thread,
    at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    from: ["Ana", "Bo", "north"][i % 3] as string,
    role: i % 3 === 2 ? "assistant" : "user",
    text: text.trim(),
  };
}

/**
 * The thread's log through the core, every node built at once by a cold summarizer: the nodes
 * it built (free ones too) and how many merges the summarizer made.
 */
async function cleanRun(
  h: Harness,
  thread: string,
): Promise<{
  state: ThreadState;
  nodes: Map<string, string>;
  merges: number;
}> {
  const summarizer = new ExtractiveSummarizer({ digestBytes: 0 });
  const nodes = new Map<string, string>();
  let merges = 0;
  let state = initialThreadState(thread, SETTINGS);
  for (const { message: m, seq } of h.log.get(thread) ?? []) {
    state = appendMessage(state, m, seq).state;
    for (;;) {
      const taken = takeJobs(state, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      state = taken.state;
      const at = state;
      for (const job of taken.started.map((ref) => jobFor(at, ref))) {
        forgetWeighed();
        const { text } = await summarizer.summarize(job);
        nodes.set(`${job.level}:${job.index}`, text);
        if (job.kind === "merge") merges += 1;
        state = summaryBuilt(state, job, text).state;
      }
    }
    // Free nodes (their own line, no summarizer) are on HISTORY too.
    for (const node of state.outbox) nodes.set(`${node.level}:${node.index}`, node.text);
    state = outboxPublished(state, state.outbox.length);
  }
  return { state, nodes, merges };
}

describe("partitioned workers joining and leaving", () => {
  it("build every thread's lines as one clean run of its log would", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    const view = clusterView(h.nc, names);
    const members = (count: number) =>
      waitFor(
        `${count} members holding every partition`,
        async () => {
          const v = await view();
          const held = v.members.reduce((n, m) => n + m.partitions.length, 0);
          return v.members.length === count && held === PARTITIONS;
        },
        START_DEADLINE_MS,
      );
    const threads = Array.from({ length: THREADS }, (_, i) => `mv${i}`);
    const publish = (from: number) => publishRange(h, threads, from, from + STEP, message);
    const worker = (summarizerThreads: number) => {
      const w = spawnWorker(nats.url, names, SETTINGS, {
        HISTORY_SUMMARIZER_THREADS: String(summarizerThreads),
      });
      scope.processes.push(w);
      return w;
    };

    const a = worker(0);
    await a.ready();
    await members(1);
    await publish(0);
    // Each change of members while messages come.
    let load = publish(STEP);
    const b = worker(1);
    await b.ready();
    await members(2);
    await load;
    load = publish(2 * STEP);
    const c = worker(2);
    await c.ready();
    await members(3);
    await load;
    load = publish(3 * STEP);
    a.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    await members(2);
    await load;
    await waitSettled(h, threads, START_DEADLINE_MS);
    // The snapshots are HISTORY's nodes applied to the log (as every fault test checks)…
    await expectMatchesCleanRun(h, threads, SETTINGS);
    // …and those nodes are the ones a clean run builds: each thread's lines are the same.
    let merges = 0;
    let stored = 0;
    for (const thread of threads) {
      const clean = await cleanRun(h, thread);
      merges += clean.merges;
      const snapshot = await readSnapshot(h, thread);
      expect(
        snapshot?.lines.map((l) => `${l.id}+${l.n}|${l.text}`),
        `lines of ${thread}`,
      ).toEqual(clean.state.outline.map((l) => `${l.index << l.level}+${1 << l.level}|${l.text}`));
      const history = await readHistory(h, thread);
      for (const [key, text] of history) {
        stored += 1;
        expect(text, `node ${key} of ${thread}`).toBe(clean.nodes.get(key));
      }
    }
    // Real work: the summarizer merged, and HISTORY holds what it built.
    expect(merges).toBeGreaterThan(10 * THREADS);
    expect(stored).toBeGreaterThan(merges);
    // The threads moved: each of a's partitions went to another worker.
    expect(a.output).toContain("cluster: handed over partitions");
    for (const w of [a, b, c]) expect(w.output).not.toContain("written by someone else");
  });
});
