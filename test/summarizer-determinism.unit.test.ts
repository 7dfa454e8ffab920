// The offline summarizer is a pure function of the messages a node covers and the settings
// (SPEC, "Decided since the first version"): what a process holds (the digests of the nodes it
// built, the memo of weighed clauses), in what order it was asked, and on how many threads it
// runs never change a byte of a line. Each property runs random conversations through the real
// core and compares every node a summarizer built with the one a cold summarizer builds.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { jobFor } from "../shared/job-view.ts";
import type { Message } from "../shared/events.ts";
import type { SummaryJob } from "../shared/jobs.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  appendMessage,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
} from "../shared/thread.ts";
import { ExtractiveSummarizer } from "../services/summarizer/extractive.ts";
import { forgetWeighed } from "../services/summarizer/extract/digest.ts";
import { ExtractPool, threadEntry } from "../services/summarizer/pool.ts";
import { multiSession } from "../bench/support/sessions.ts";

const SPEAKERS = ["Ana", "Bo", "Zephyrine Okafor", "李雷"];
const WORDS = [
  "we",
  "decided",
  "to",
  "move",
  "the",
  "offsite",
  "Porto",
  "on",
  "June 14",
  "booked",
  "can you",
  "send",
  "contract",
  "draft",
  "by",
  "Friday",
  "BILL-4821",
  "$4,250",
  "garden",
  "weather",
  "instead",
  "honestly",
  "nothing",
  "happened",
  "services/billing/limits.ts",
  "été",
  "and",
  "but",
  "which",
  "failed",
  "fixed",
  "prefers",
];
const sentence = fc
  .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 18 })
  .chain((words) =>
    fc
      .constantFrom(".", ".", "?", "!", ",", ";", "")
      .map((end) => `${words.join(" ").replace(/^./, (c) => c.toUpperCase())}${end}`),
  );
/** A message: a few sentences, now and then in paragraphs; short ones are free leaves. */
const said = fc
  .array(sentence, { minLength: 1, maxLength: 14 })
  .chain((ss) =>
    fc
      .array(fc.boolean(), { minLength: ss.length, maxLength: ss.length })
      .map((breaks) => ss.map((s, i) => (breaks[i] ? `${s}\n\n` : `${s} `)).join("")),
  );
const conversation = fc.array(
  fc.record({
    from: fc.constantFrom(...SPEAKERS),
    text: said,
    steps: fc.option(fc.constant<unknown[]>([{ tool: "bash", args: "npm test" }]), { freq: 8 }),
  }),
  { minLength: 6, maxLength: 48 },
);
const settings = fc.record({
  line: fc.constantFrom(96, 200, 512),
  tail: fc.constantFrom<[number, number]>([60, 120], [150, 300]),
  scale: fc.constantFrom(3, 6),
});

type Said = { from: string; text: string; steps: unknown[] | null };

function messagesOf(thread: string, said: readonly Said[]): Message[] {
  return said.map((m, i) => ({
    id: `${thread}-${i}`,
    thread,
    at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    from: m.from,
    role: "user",
    text: m.text,
    ...(m.steps ? { steps: m.steps } : {}),
  }));
}

function settingsOf(s: { line: number; tail: [number, number]; scale: number }): CoreSettings {
  return {
    line: s.line,
    tail: s.tail,
    outline: [s.line * s.scale, s.line * s.scale * 2],
    concurrency: 8,
  };
}

/**
 * Every node a conversation builds, by name: the jobs of each turn handed to `summarize` in the
 * order `order` gives them (an answer order a worker may see), their texts applied in that order.
 */
async function nodesOf(
  messages: readonly Message[],
  core: CoreSettings,
  summarize: (job: SummaryJob) => Promise<string>,
  order: (jobs: SummaryJob[]) => SummaryJob[] = (jobs) => jobs,
): Promise<Map<string, string>> {
  const built = new Map<string, string>();
  let state = initialThreadState(messages[0]?.thread ?? "t", core);
  for (const [i, message] of messages.entries()) {
    state = appendMessage(state, message, i + 1).state;
    for (;;) {
      const taken = takeJobs(state, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      state = taken.state;
      const at = state;
      for (const job of order(taken.started.map((ref) => jobFor(at, ref)))) {
        const text = await summarize(job);
        built.set(job.name, text);
        state = summaryBuilt(state, job, text).state;
      }
    }
    state = outboxPublished(state, state.outbox.length);
  }
  return built;
}

/** A summarizer that holds nothing and has weighed nothing before each job: a fresh process. */
function cold(): (job: SummaryJob) => Promise<string> {
  const summarizer = new ExtractiveSummarizer({ digestBytes: 0 });
  return async (job) => {
    forgetWeighed();
    return (await summarizer.summarize(job)).text;
  };
}

const mergesIn = (nodes: Map<string, string>) =>
  [...nodes.keys()].filter((name) => !name.endsWith("+1")).length;

describe("the extractive summarizer's lines", () => {
  // One summarizer for every run: it still holds digests of the runs before, under the same
  // thread and node names but other lines (a thread deleted and made again).
  const shared = new ExtractiveSummarizer();

  it("are the same with held digests (any order, any evictions) as built cold", async () => {
    let merges = 0;
    await fc.assert(
      fc.asyncProperty(
        conversation,
        settings,
        fc.integer({ min: 0, max: 40_000 }),
        fc.array(fc.nat(), { minLength: 64, maxLength: 64 }),
        async (said, s, bytes, draws) => {
          const messages = messagesOf("t", said);
          const core = settingsOf(s);
          const expected = await nodesOf(messages, core, cold());
          merges += mergesIn(expected);
          let draw = 0;
          const next = () => (draws[draw++ % draws.length] as number) >>> 0;
          // Jobs answered in another order; now and then the memo of weighed clauses emptied.
          const shuffle = (jobs: SummaryJob[]) => {
            const out = [...jobs];
            for (let i = out.length - 1; i > 0; i--) {
              const j = next() % (i + 1);
              [out[i], out[j]] = [out[j] as SummaryJob, out[i] as SummaryJob];
            }
            return out;
          };
          const viaShared = await nodesOf(
            messages,
            core,
            async (job) => {
              if (next() % 7 === 0) forgetWeighed();
              return (await shared.summarize(job)).text;
            },
            shuffle,
          );
          expect(viaShared).toEqual(expected);
          // A cache that holds a few digests: most are dropped before their parent's merge.
          const small = new ExtractiveSummarizer({ digestBytes: bytes });
          const viaSmall = await nodesOf(messages, core, async (job) => {
            return (await small.summarize(job)).text;
          });
          expect(viaSmall).toEqual(expected);
        },
      ),
      { numRuns: 60 },
    );
    // The runs merged, at several levels (not only free parents).
    expect(merges).toBeGreaterThan(200);
  });

  it("are the same whether a merge's children were built here or not", async () => {
    // A move between instances: a new owner merges nodes another process built (it holds
    // nothing of them), then goes on building. Each node is the same as in one process.
    await fc.assert(
      fc.asyncProperty(conversation, settings, fc.nat(), async (said, s, cut) => {
        const messages = messagesOf("moved", said);
        const core = settingsOf(s);
        const expected = await nodesOf(messages, core, cold());
        const before = new ExtractiveSummarizer();
        const after = new ExtractiveSummarizer();
        let seen = 0;
        const at = cut % (messages.length + 1);
        const got = await nodesOf(messages, core, async (job) => {
          const owner = seen++ < at ? before : after;
          return (await owner.summarize(job)).text;
        });
        expect(got).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });
});

describe("the extractive summarizer's lines on worker threads", () => {
  const pools: ExtractPool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  it("do not depend on the number of threads", async () => {
    const inline = new ExtractiveSummarizer();
    const threaded = [1, 3].map((size) => {
      const pool = new ExtractPool(size, threadEntry());
      pools.push(pool);
      return new ExtractiveSummarizer({ pool });
    });
    // Two conversations at once on each, as a worker runs many threads' jobs: each thread's jobs
    // go to one of the pool's threads, another one with another number of threads.
    const conversations = [
      multiSession("pool-a", 5, 4).messages,
      multiSession("pool-b", 6, 4).messages,
      ...fc.sample(conversation, { numRuns: 4, seed: 46 }).map((c, i) => messagesOf(`p${i}`, c)),
    ];
    const core = settingsOf({ line: 512, tail: [150, 300], scale: 4 });
    const expected = await Promise.all(conversations.map((m) => nodesOf(m, core, cold())));
    expect(expected.map(mergesIn).reduce((a, b) => a + b)).toBeGreaterThan(40);
    for (const summarizer of [inline, ...threaded]) {
      const got = await Promise.all(
        conversations.map((m) =>
          nodesOf(m, core, async (job) => (await summarizer.summarize(job)).text),
        ),
      );
      expect(got).toEqual(expected);
    }
  });
});
