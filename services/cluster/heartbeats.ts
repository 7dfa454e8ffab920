import type { Heartbeat } from "../../shared/ownership.ts";
import type { MemberInfo } from "./bucket.ts";

/** A member's heartbeat as seen in the watch: when, at which revision, and what it said. */
export interface Beat {
  seenAt: number;
  revision: number;
  info: MemberInfo;
}

/** Every member's heartbeat as heard at `now`, and those heard within the failover time. */
export function heartbeatsAt(
  beats: ReadonlyMap<string, Beat>,
  id: string,
  now: number,
  heardAt: (b: Beat) => number,
  failoverMs: number,
  leaving: boolean,
): { heartbeats: Heartbeat[]; heard: Set<string> } {
  const heartbeats: Heartbeat[] = [];
  const heard = new Set<string>();
  for (const [who, b] of beats) {
    const at = who === id ? now : heardAt(b);
    if (now - at <= failoverMs) heard.add(who);
    heartbeats.push({
      id: who,
      at,
      capacity: b.info.capacity,
      ...(who === id
        ? leaving
          ? { leaving: true }
          : {}
        : b.info.leaving
          ? { leaving: true }
          : {}),
    });
  }
  if (!beats.has(id)) {
    heartbeats.push({ id, at: now, ...(leaving ? { leaving: true } : {}) });
    heard.add(id);
  }
  return { heartbeats, heard };
}
