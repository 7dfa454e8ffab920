import type { CutPlan } from "./types.ts";

/**
 * Where the next cut falls, from the estimated tokens of the tail's messages, oldest first
 * (SPEC §4): a leaf is due once the tail from it to the end costs more than `low` (tail[0]); a
 * cut, once the tail passes tail[1], takes the oldest until the rest costs at most `low`, but
 * never the newest message.
 */
export function cutPlan(costs: readonly number[], low: number): CutPlan {
  let tokens = 0;
  for (const c of costs) tokens += c;
  let rest = tokens;
  let due = 0;
  let leavingTokens = 0;
  while (due < costs.length && rest > low) {
    const cost = costs[due] as number;
    rest -= cost;
    if (due < costs.length - 1) leavingTokens += cost;
    due += 1;
  }
  return { due, leaving: Math.min(due, Math.max(0, costs.length - 1)), leavingTokens, tokens };
}
