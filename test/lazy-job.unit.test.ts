import { describe, expect, it } from "vitest";
import { jobFor, lazyJobFor } from "../shared/job-view.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { appendMessage, initialThreadState, summaryBuilt, takeJobs } from "../shared/thread.ts";
import { fakeSummary, makeMessage } from "./support/conversation.ts";

const settings: CoreSettings = {
  line: 512,
  tail: [200, 400],
  outline: [2000, 4000],
  concurrency: 8,
};

describe("lazyJobFor (the machine's requestSummary jobs)", () => {
  it("is the job jobFor makes, view included, for every job of a long thread; the view is made once", () => {
    let s = initialThreadState("lazy", settings);
    let compared = 0;
    for (let i = 0; i < 400; i++) {
      s = appendMessage(s, makeMessage("lazy", i, `message ${i} `.repeat(1 + (i % 37)))).state;
      const taken = takeJobs(s);
      // Jobs of a settled state, read after later states were made from it (as the host does).
      const jobs = taken.started.map((ref) => ({ ref, lazy: lazyJobFor(taken.state, ref) }));
      s = taken.state;
      for (const { ref } of jobs) s = summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
      for (const { ref, lazy } of jobs) {
        const eager = jobFor(taken.state, ref);
        expect(lazy).toEqual(eager);
        expect(JSON.stringify(lazy)).toBe(JSON.stringify(eager));
        expect(lazy.context).toBe(lazy.context);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(100);
  });
});
