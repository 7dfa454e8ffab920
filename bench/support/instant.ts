// A summarizer that answers at once with a fixed-size line: the figures measure our plumbing,
// not a model. It counts its calls so a bench can show how many there were (replay: zero).
import type { SummaryJob, SummaryResult } from "../../shared/jobs.ts";
import type { MeteredSummarizer } from "../../services/summarizer/index.ts";
import { noUsage, type UsageTotals } from "../../services/summarizer/usage.ts";

export class InstantSummarizer implements MeteredSummarizer {
  readonly name = "instant";
  calls = 0;

  summarize(job: SummaryJob): Promise<SummaryResult> {
    this.calls += 1;
    return Promise.resolve({ text: `${job.name} ${"s".repeat(200)}`, calls: 1 });
  }

  usage(): UsageTotals {
    return { ...noUsage(), calls: this.calls };
  }
}
