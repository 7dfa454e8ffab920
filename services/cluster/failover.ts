import { wholeSetting, type SettingValues } from "../config/whole-setting.ts";

/**
 * A member silent this long is dead. With a heartbeat every quarter of it, four in a row must be
 * missed; kill → first write of a dead member's thread measured 6.7–10.9 s at 5,000 under load
 * (docs/scale-out.md), so 3,000 keeps the 10 s bound there.
 */
export const DEFAULT_FAILOVER_MS = 3_000;

/**
 * OUTLINE_FAILOVER_MS, undefined when unset (DEFAULT_FAILOVER_MS). Read by the worker and by
 * the views of the cluster (`GET /cluster`, `outline cluster`), which judge liveness alike.
 */
export function failoverMsOf(values: SettingValues): number | undefined {
  return wholeSetting(
    values,
    "OUTLINE_FAILOVER_MS",
    200,
    "whole milliseconds",
    DEFAULT_FAILOVER_MS,
  );
}
