import { script } from "../../services/demo/script.ts";
import { publishMessage, type Harness } from "./thread-worker.ts";

/** Threads of the explorer's screenshots and browser test: a long one and a few short ones. */
const THREADS: [string, number][] = [
  ["vendor-contracts", 12],
  ["hr-questions-anna", 3],
  ["standup-2026-01-05", 22],
  ["design-review-checkout", 34],
  ["support-4702", 18],
  ["support-4698", 75],
  ["migration-plan-db", 140],
  ["legal-review-17", 8],
  ["research-notes", 5],
  ["billing-march", 15],
  ["ops-oncall", 60],
  ["onboarding-lisbon", 40],
  ["sales-emea-q3", 120],
  ["incident-2291", 300],
  ["support-4711", 900],
];

export const SCREENSHOT_THREADS = THREADS.map(([t]) => t);

/** Publishes every thread's scripted conversation; returns the long one's id. */
export async function seedThreads(h: Harness): Promise<string> {
  for (const [thread, count] of THREADS) {
    const pending: Promise<unknown>[] = [];
    for (const message of script(thread, count)) pending.push(publishMessage(h, message));
    await Promise.all(pending);
  }
  return "support-4711";
}
