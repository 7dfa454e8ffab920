import type { SummaryUsage } from "../../shared/jobs.ts";

/** One model call's tokens, as reported to `onUsage` for metrics. */
export interface UsageEvent extends SummaryUsage {
  model: string;
  /** The line name of the job the call was for. */
  job: string;
}

/** Tokens and model calls since start, over all jobs. */
export interface UsageTotals extends SummaryUsage {
  calls: number;
  /** Jobs that ended in an error. */
  failures: number;
  /** CPU milliseconds spent summarizing in this process (the offline summarizer; absent: none). */
  cpuMs?: number;
}

export const noUsage = (): UsageTotals => ({
  calls: 0,
  failures: 0,
  inputTokens: 0,
  cachedTokens: 0,
  outputTokens: 0,
});

export function addUsage(into: SummaryUsage, add: SummaryUsage): void {
  into.inputTokens += add.inputTokens;
  into.cachedTokens += add.cachedTokens;
  into.outputTokens += add.outputTokens;
}
