import { SettingsError } from "../../shared/errors.ts";
import { failoverMsOf } from "../cluster/failover.ts";
import { wholeSetting, type SettingValues } from "../config/whole-setting.ts";
import { allowSinglePeersOf } from "./single-peers.ts";
import {
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_BACKLOG_LIMIT,
  DEFAULT_IDLE_MS,
  DEFAULT_MAX_ACTORS,
  DEFAULT_SAVE_LINGER_MS,
} from "./worker.ts";

/** The worker's own variables (env or config file), read once at start. */
export interface WorkerSettings {
  idleMs: number;
  /** Live actors at most; Infinity for `none`. */
  maxActors: number;
  ackWaitMs: number;
  backlogLimit: number;
  /** Absent: the worker's default (500 ms, at most a tenth of the ack wait). */
  saveLingerMs?: number;
  /** Partitioned mode: when a silent member counts as dead (docs/scale-out.md). */
  failoverMs?: number;
  /** Partitioned mode: this member's share of the partitions. */
  capacity?: number;
  /** Single mode: stop when another single-mode worker came first, or run beside it. */
  singlePeers: "refuse" | "allow";
}

export function workerSettings(values: SettingValues): WorkerSettings {
  const idleMs =
    wholeSetting(values, "OUTLINE_IDLE_MS", 10, "whole milliseconds", DEFAULT_IDLE_MS) ??
    DEFAULT_IDLE_MS;
  const maxActors = maxActorsOf(values);
  const ackWaitMs =
    wholeSetting(values, "OUTLINE_ACK_WAIT_MS", 10, "whole milliseconds", DEFAULT_ACK_WAIT_MS) ??
    DEFAULT_ACK_WAIT_MS;
  const backlogLimit =
    wholeSetting(values, "OUTLINE_BACKLOG_LIMIT", 1, "a whole number", DEFAULT_BACKLOG_LIMIT) ??
    DEFAULT_BACKLOG_LIMIT;
  const saveLingerMs = wholeSetting(
    values,
    "OUTLINE_SAVE_LINGER_MS",
    0,
    "whole milliseconds",
    DEFAULT_SAVE_LINGER_MS,
  );
  if (saveLingerMs !== undefined && saveLingerMs > ackWaitMs / 10) {
    // Events wait unacknowledged for their save: far less than the ack wait, or they come back.
    throw new SettingsError(
      "OUTLINE_SAVE_LINGER_MS",
      `${saveLingerMs} ms is more than a tenth of the ack wait (${ackWaitMs} ms); write at most ${Math.floor(ackWaitMs / 10)} (default ${Math.min(DEFAULT_SAVE_LINGER_MS, ackWaitMs / 10)}), or raise OUTLINE_ACK_WAIT_MS`,
    );
  }
  const failoverMs = failoverMsOf(values);
  const capacity = wholeSetting(values, "OUTLINE_CAPACITY", 1, "a whole number", 1);
  return {
    singlePeers: allowSinglePeersOf(values) ? "allow" : "refuse",
    idleMs,
    maxActors,
    ackWaitMs,
    backlogLimit,
    ...(saveLingerMs !== undefined ? { saveLingerMs } : {}),
    ...(failoverMs !== undefined ? { failoverMs } : {}),
    ...(capacity !== undefined ? { capacity } : {}),
  };
}

/** OUTLINE_MAX_ACTORS: a whole number ≥ 1, or `none` for no cap. */
function maxActorsOf(values: SettingValues): number {
  const raw = values.OUTLINE_MAX_ACTORS?.trim();
  if (!raw) return DEFAULT_MAX_ACTORS;
  if (raw.toLowerCase() === "none") return Number.POSITIVE_INFINITY;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) {
    throw new SettingsError(
      "OUTLINE_MAX_ACTORS",
      `'${raw}' is neither a whole number ≥ 1 nor none; write e.g. OUTLINE_MAX_ACTORS=${DEFAULT_MAX_ACTORS}, or OUTLINE_MAX_ACTORS=none for no cap`,
    );
  }
  return Number(raw);
}
