import { execFileSync, spawnSync } from "node:child_process";
import { getEventListeners } from "node:events";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { jobFor } from "../shared/job-view.ts";
import { SettingsError } from "../shared/errors.ts";
import type { Message } from "../shared/events.ts";
import type { SummaryJob } from "../shared/jobs.ts";
import { DEFAULT_SETTINGS, parseSettings } from "../shared/settings.ts";
import {
  appendMessage,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
} from "../shared/thread.ts";
import { ExtractiveSummarizer } from "../services/summarizer/extractive.ts";
import { createSummarizer } from "../services/summarizer/index.ts";
import {
  ExtractPool,
  defaultThreads,
  threadEntry,
  tsxApiFor,
} from "../services/summarizer/pool.ts";
import { multiSession } from "../bench/support/sessions.ts";

/** A task that keeps a thread busy for a while. */
const LONG_LEAF = {
  kind: "leaf" as const,
  message: { from: "Ana", text: "word ".repeat(20_000) },
  position: 0,
  line: 512,
};

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** node_modules/.cache, which a fresh `npm ci` does not create. */
function cacheDir(): string {
  const dir = join(ROOT, "node_modules", ".cache");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Every node a conversation builds, by name, summarized by `summarize` as the core asks. */
async function nodesOf(
  messages: readonly Message[],
  summarize: (job: SummaryJob) => Promise<string>,
): Promise<Map<string, string>> {
  const settings = { ...DEFAULT_SETTINGS, tail: [600, 1_200] as [number, number] };
  const built = new Map<string, string>();
  let state = initialThreadState(messages[0]?.thread ?? "", {
    ...settings,
    outline: [4_000, 8_000],
  });
  for (const [i, message] of messages.entries()) {
    state = appendMessage(state, message, i + 1).state;
    for (;;) {
      const taken = takeJobs(state, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      state = taken.state;
      const at = state;
      const jobs = taken.started.map((ref) => jobFor(at, ref));
      // As the worker runs them: all of a turn's jobs at once, answers in any order.
      const texts = await Promise.all(jobs.map(summarize));
      jobs.forEach((job, k) => {
        built.set(job.name, texts[k] as string);
        state = summaryBuilt(state, job, texts[k] as string).state;
      });
    }
    state = outboxPublished(state, state.outbox.length);
  }
  return built;
}

const { messages } = multiSession("threads", 11, 6);

describe("the extractive summarizer in worker threads", () => {
  const pools: ExtractPool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  it("builds every node exactly as on the event loop (TypeScript entry, tsx's loader)", async () => {
    const entry = threadEntry();
    // Under vitest the process was not started through tsx: the thread registers tsx itself.
    expect(entry.pathname.endsWith("/services/summarizer/extract-thread.ts")).toBe(true);
    expect(tsxApiFor(entry)).toMatch(/^file:.*\/tsx\/.*\.mjs$/);
    expect(tsxApiFor(new URL("file:///app/extract-thread.js"))).toBeUndefined();
    const pool = new ExtractPool(2, entry);
    pools.push(pool);
    const inline = new ExtractiveSummarizer();
    const threaded = new ExtractiveSummarizer({ pool });
    const expected = await nodesOf(messages, async (job) => (await inline.summarize(job)).text);
    const got = await nodesOf(messages, async (job) => (await threaded.summarize(job)).text);
    const merges = [...expected.keys()].filter((name) => !name.endsWith("+1"));
    expect(merges.length).toBeGreaterThan(20);
    expect(got).toEqual(expected);
    // Both hold the digests of the nodes whose parent is not built yet, the same ones.
    expect(threaded.held()).toEqual(inline.held());
    // Both count the CPU the work took (the threads report theirs; on the event loop, its own).
    expect(inline.usage().cpuMs).toBeGreaterThan(0);
    expect(threaded.usage().cpuMs).toBeGreaterThan(0);
    expect(threaded.usage().cpuMs).toBe(pool.cpuMs);
  });

  it("starts its threads before the first job when asked", async () => {
    const pool = new ExtractPool(2, threadEntry());
    pools.push(pool);
    expect(pool.started).toBe(0);
    await new ExtractiveSummarizer({ pool }).start();
    // Each thread answered a warm-up line: it started, loaded the summarizer and ran it once.
    // (Not its CPU: /proc counts 10 ms ticks, and a warm-up line often takes less on a fast host.)
    expect(pool.started).toBe(2);
  });

  it("fails a task the thread cannot do, and goes on with the next", async () => {
    const pool = new ExtractPool(1, threadEntry());
    pools.push(pool);
    const broken = { kind: "leaf", line: 512, position: 0 } as unknown as Parameters<
      ExtractPool["run"]
    >[0];
    await expect(pool.run(broken)).rejects.toThrow(/extractive summarizer thread: .*TypeError/s);
    const ok = await pool.run({
      kind: "leaf",
      message: { from: "Ana", text: "Booked the venue in Porto for June 14." },
      position: 0,
      line: 512,
    });
    expect(ok.text).toBe("Ana: Booked the venue in Porto for June 14.");
  });

  it("stops waiting for an aborted task, and fails what is pending when closed", async () => {
    const pool = new ExtractPool(1, threadEntry());
    const task = LONG_LEAF;
    const controller = new AbortController();
    // The first two go to the thread; they are ended with it.
    const inThread = Promise.allSettled([pool.run(task), pool.run(task)]);
    const third = pool.run(task, controller.signal);
    controller.abort(new Error("job stopped"));
    await expect(third).rejects.toThrow("job stopped");
    const pending = expect(pool.run(task)).rejects.toThrow(/closed/);
    await pool.close();
    await pending;
    await expect(pool.run(task)).rejects.toThrow(/closed/);
    // Whether they finished before the thread was ended or failed with it, none hangs.
    expect(await inThread).toHaveLength(2);
  });

  it("listens once to a signal its tasks share, and fails all of them when it aborts", async () => {
    const pool = new ExtractPool(1, threadEntry());
    pools.push(pool);
    const task = LONG_LEAF;
    const controller = new AbortController();
    const runs = [1, 2, 3].map(() => pool.run(task, controller.signal));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort(new Error("jobs stopped"));
    for (const run of runs) await expect(run).rejects.toThrow("jobs stopped");
    // A task answered before its signal aborts keeps its answer.
    const later = new AbortController();
    const answered = pool.run({ ...task, message: { from: "Ana", text: "Hi." } }, later.signal);
    expect((await answered).text).toContain("Hi");
    later.abort();
    expect((await answered).text).toContain("Hi");
  });

  it("summarizes on the event loop when its threads cannot start", async () => {
    const dir = mkdtempSync(join(cacheDir(), "outline-broken-"));
    try {
      const entry = pathToFileURL(join(dir, "extract-thread.js"));
      writeFileSync(entry, `throw new Error("this entry is broken");\n`);
      const pool = new ExtractPool(1, entry);
      pools.push(pool);
      const job = (await jobsOf(messages.slice(0, 40)))[0] as SummaryJob;
      const warned = new Promise<Error>((resolve) => process.once("warning", resolve));
      const text = (await new ExtractiveSummarizer({ pool }).summarize(job)).text;
      expect(text).toBe((await new ExtractiveSummarizer().summarize(job)).text);
      expect((await warned).message).toMatch(/cannot start .*this entry is broken.*event loop/s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is what HISTORY_SUMMARIZER_THREADS asks for, with a clear error otherwise", () => {
    expect(defaultThreads(1)).toBe(1);
    expect(defaultThreads(2)).toBe(1);
    expect(defaultThreads(8)).toBe(4);
    const settings = parseSettings({});
    expect(createSummarizer(settings, { HISTORY_SUMMARIZER_THREADS: "0" })).toBeInstanceOf(
      ExtractiveSummarizer,
    );
    for (const bad of ["two", "-1", "1.5", "65"]) {
      expect(() => createSummarizer(settings, { HISTORY_SUMMARIZER_THREADS: bad })).toThrow(
        SettingsError,
      );
    }
    expect(() => new ExtractPool(1, new URL("file:///nowhere/extract-thread.js"))).toThrow(
      /extract-thread\.js is missing.*HISTORY_SUMMARIZER_THREADS=0/,
    );
  });

  it("runs compiled to JavaScript, with no loader, the entry beside the compiled pool", async () => {
    // Inside the repository, so the compiled files resolve its node_modules.
    const out = mkdtempSync(join(cacheDir(), "outline-compiled-"));
    try {
      execFileSync(
        process.execPath,
        [
          join(ROOT, "node_modules", "typescript", "bin", "tsc"),
          ...["--ignoreConfig", "--outDir", out, "--rootDir", ROOT],
          ...["--rewriteRelativeImportExtensions", "--target", "ES2022"],
          ...["--module", "nodenext", "--moduleResolution", "nodenext", "--strict"],
          ...["--skipLibCheck", "--types", "node"],
          join(ROOT, "services/summarizer/index.ts"),
          join(ROOT, "services/summarizer/extract-thread.ts"),
        ],
        { stdio: "pipe" },
      );
      const jobs = await jobsOf(messages.slice(0, 40));
      const script = join(out, "run.mjs");
      writeFileSync(
        script,
        `import { createSummarizer } from ${JSON.stringify(pathToFileURL(join(out, "services/summarizer/index.js")).href)};
const s = createSummarizer({ summarizer: "extractive" }, { HISTORY_SUMMARIZER_THREADS: "1" });
const jobs = JSON.parse(process.argv[2]);
const texts = [];
for (const job of jobs) texts.push((await s.summarize(job)).text);
await s.close();
console.log(JSON.stringify({ texts, execArgv: process.execArgv }));
`,
      );
      const run = spawnSync(process.execPath, [script, JSON.stringify(jobs)], {
        encoding: "utf8",
        env: { ...process.env, NODE_OPTIONS: "" },
      });
      expect(run.stderr).toBe("");
      const { texts, execArgv } = JSON.parse(run.stdout) as { texts: string[]; execArgv: string[] };
      expect(execArgv).toEqual([]);
      const inline = new ExtractiveSummarizer();
      const expected: string[] = [];
      for (const job of jobs) expected.push((await inline.summarize(job)).text);
      expect(texts).toEqual(expected);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

/** The jobs a conversation hands out, in order, without their views (as plain JSON). */
async function jobsOf(log: readonly Message[]): Promise<SummaryJob[]> {
  const jobs: SummaryJob[] = [];
  const inline = new ExtractiveSummarizer();
  await nodesOf(log, async (job) => {
    jobs.push({ ...job, context: [] });
    return (await inline.summarize(job)).text;
  });
  expect(jobs.some((j) => j.kind === "merge")).toBe(true);
  return jobs;
}
