// Talks to a real model, so it runs only when OPENAI_API_KEY is set (OPENAI_BASE_URL and
// OPENAI_LIVE_MODEL optional): the one test that shows our prompts work on an actual model.
import { describe, expect, it } from "vitest";
import { utf8Bytes } from "../shared/bytes.ts";
import { canGroup, type LeafJob, type MergeJob } from "../shared/jobs.ts";
import { createSummarizer } from "../services/summarizer/index.ts";

const key = process.env["OPENAI_API_KEY"];
const model = process.env["OPENAI_LIVE_MODEL"] ?? "gpt-4o-mini";
const title = key
  ? `live model openai/${model}: a leaf, a merge and a group keep the planted facts within the limit`
  : "live model (skipped: OPENAI_API_KEY not set)";

const text = [
  "Bo, before Friday please roll billing back to commit 9f3c2ab on prod-db-3.",
  "Acme Corp's invoice run INV-20931 failed twice with HTTP 429 at 2,500 requests per minute,",
  "and the fix in services/billing/limits.ts is not deployed yet. Maria will check the dashboard.",
  "Background: we tried raising the limit on 2026-11-28 but the load balancer kept its own cap,",
  "which nobody had documented; the ops wiki still says the cap was removed in March.",
].join(" ");

describe("OpenAI-compatible summarizer against a live endpoint", () => {
  it.skipIf(!key)(title, { timeout: 120_000 }, async () => {
    const summarizer = createSummarizer({ summarizer: `openai/${model}` }, process.env);
    const line = 200;
    const leaf: LeafJob = {
      kind: "leaf",
      seq: 0,
      thread: "live",
      level: 0,
      index: 2,
      name: "2+1",
      line,
      context: [{ id: 0, n: 2, text: "Ana: asks Bo to look after billing this week / Bo: agrees" }],
      message: {
        id: "m2",
        thread: "live",
        at: "2026-11-30T08:15:00Z",
        from: "Ana",
        to: "Bo",
        role: "user",
        text,
        position: 2,
      },
    };
    const first = await summarizer.summarize(leaf);
    expect(utf8Bytes(first.text)).toBeLessThanOrEqual(Math.floor(line * 1.25));
    expect(first.text).toContain("9f3c2ab");
    expect(first.text).not.toMatch(/^\d+\+\d+\|/);
    expect(first.usage?.inputTokens).toBeGreaterThan(0);

    const merge: MergeJob = {
      kind: "merge",
      thread: "live",
      level: 1,
      index: 1,
      name: "2+2",
      line,
      context: leaf.context,
      left: { id: 2, n: 1, text: first.text },
      right: {
        id: 3,
        n: 1,
        text: "Bo → Ana: rolled back to 9f3c2ab at 10:40; INV-20931 re-run succeeded; limits.ts fix still waits for review by Maria",
      },
      first: 2,
      last: 3,
    };
    const merged = await summarizer.summarize(merge);
    expect(utf8Bytes(merged.text)).toBeLessThanOrEqual(Math.floor(line * 1.25));
    expect(merged.text).toContain("INV-20931");
    expect(summarizer.usage().calls).toBeGreaterThanOrEqual(2);

    // A group (HISTORY_GROUP): both nodes in one call, each line named and within the limit.
    if (!canGroup(summarizer)) throw new Error("the OpenAI summarizer builds groups");
    const second: LeafJob = {
      ...leaf,
      index: 3,
      name: "3+1",
      message: {
        ...leaf.message,
        id: "m3",
        position: 3,
        from: "Bo",
        to: "Ana",
        text: "Rolled back to 9f3c2ab at 10:40. INV-20931 re-run succeeded.",
      },
    };
    const group = await summarizer.summarizeGroup({
      thread: "live",
      line,
      context: leaf.context,
      jobs: [leaf, second],
    });
    expect(group.calls).toBe(1);
    const [one, two] = group.texts;
    expect(one ?? "", "line 2+1 of the group").toContain("9f3c2ab");
    expect(two ?? "", "line 3+1 of the group").toMatch(/10:40|INV-20931/);
    for (const t of group.texts)
      expect(utf8Bytes(t ?? "")).toBeLessThanOrEqual(Math.floor(line * 1.25));
  });
});
