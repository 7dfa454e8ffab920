import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clusterViewOf, type ClusterEntry, type MemberInfo } from "../services/cluster/bucket.ts";
import { clusterAnswerOf, clusterTable } from "../services/cluster/view.ts";

// GET /cluster's view of the bucket's keys (services/cluster/bucket.ts), at a fixed now.
const NOW = Date.parse("2026-12-04T18:00:00Z");
const FAILOVER_MS = 3_000;

function entry(key: string, value: unknown, msAgo = 0): ClusterEntry {
  return {
    key,
    operation: "PUT",
    created: new Date(NOW - msAgo),
    json: <T>() => value as T,
  };
}

function member(id: string, partitions: number[], msAgo: number, stats = { threads: 0, lag: 0 }) {
  const info: MemberInfo = {
    id,
    host: "vm",
    pid: 1,
    since: "2026-12-04T17:00:00Z",
    capacity: 1,
    partitions,
    ...stats,
  };
  return entry(`member.${id}`, info, msAgo);
}

const lease = (k: number, holder: string) => entry(`lease.${k}`, { member: holder, since: "" });
const layout = (partitions: number) => entry("layout", { partitions });

const single = (id: string, pid: number, msAgo: number, since = "2026-12-04T17:00:00Z") =>
  entry(`single.${id}`, { id, host: "vm", pid, since, first: pid }, msAgo);

describe("the cluster view", () => {
  it("lists single-mode workers from their heartbeats, and says single mode", () => {
    const peers = [single("w2", 42, 500, "2026-12-04T17:30:00Z"), single("w1", 41, 9_000)];
    const answer = clusterAnswerOf(clusterViewOf(peers, NOW, FAILOVER_MS));
    expect(answer).toMatchObject({ mode: "single", members: [], partitions: 0 });
    expect(answer.workers?.map((w) => [w.id, w.pid, w.live])).toEqual([
      ["w1", 41, false],
      ["w2", 42, true],
    ]);
    const table = clusterTable(answer);
    expect(table[0]).toMatch(/^single mode .* 1 live worker\(s\)$/);
    expect(table.slice(1)).toEqual([
      "w1  silent 9 s  vm pid 41 since 2026-12-04T17:00:00Z",
      "w2  live  vm pid 42 since 2026-12-04T17:30:00Z",
    ]);
    // A layout left by a cluster that ran before, none of its members live: still single.
    const after = [layout(4), member("a", [0], 60_000), single("w1", 41, 200)];
    expect(clusterAnswerOf(clusterViewOf(after, NOW, FAILOVER_MS)).mode).toBe("single");
    // A live member: partitioned, whatever single-mode heartbeats are still there.
    const live = [layout(4), member("a", [0, 1, 2, 3], 100), single("w1", 41, 200)];
    expect(clusterAnswerOf(clusterViewOf(live, NOW, FAILOVER_MS))).toMatchObject({
      mode: "partitioned",
      partitions: 4,
    });
  });

  it("shows a dead member holding what its leases still name, then nothing", () => {
    const a = member("a", [0, 1], 100, { threads: 10, lag: 1 });
    // b died: its last heartbeat said partitions 2 and 3, 40 threads, 7 events behind.
    const b = member("b", [2, 3], 5_000, { threads: 40, lag: 7 });
    const halfTaken = clusterViewOf(
      [layout(4), a, b, lease(0, "a"), lease(1, "a"), lease(2, "a"), lease(3, "b")],
      NOW,
      FAILOVER_MS,
    );
    expect(halfTaken.members.map((m) => [m.id, m.live, m.partitions, m.threads, m.lag])).toEqual([
      ["a", true, [0, 1], 10, 1],
      ["b", false, [3], 40, 7],
    ]);

    const taken = clusterViewOf(
      [layout(4), a, b, lease(0, "a"), lease(1, "a"), lease(2, "a"), lease(3, "a")],
      NOW,
      FAILOVER_MS,
    );
    const dead = taken.members.find((m) => m.id === "b");
    expect(dead).toMatchObject({
      live: false,
      partitions: [],
      threads: 0,
      lag: 0,
      heardMsAgo: 5_000,
    });
    expect(taken.leases).toEqual({ 0: "a", 1: "a", 2: "a", 3: "a" });
  });

  it("never shows the members holding more partitions than there are", () => {
    const ids = ["m0", "m1", "m2", "m3"];
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }).chain((n) =>
          fc.record({
            n: fc.constant(n),
            holders: fc.array(fc.option(fc.constantFrom(...ids), { nil: undefined }), {
              minLength: n,
              maxLength: n,
            }),
            silentMs: fc.array(fc.integer({ min: 0, max: 20_000 }), {
              minLength: ids.length,
              maxLength: ids.length,
            }),
            stale: fc.array(fc.uniqueArray(fc.nat({ max: n - 1 })), {
              minLength: ids.length,
              maxLength: ids.length,
            }),
          }),
        ),
        ({ n, holders, silentMs, stale }) => {
          const entries: ClusterEntry[] = [layout(n)];
          for (const [k, holder] of holders.entries()) if (holder) entries.push(lease(k, holder));
          for (const [i, id] of ids.entries()) {
            const silent = silentMs[i] ?? 0;
            // A live member reports what it holds; a silent one what it held when it last beat.
            const held = holders.flatMap((h, k) => (h === id ? [k] : []));
            entries.push(member(id, silent <= FAILOVER_MS ? held : (stale[i] ?? []), silent));
          }
          const view = clusterViewOf(entries, NOW, FAILOVER_MS);
          const shown = view.members.flatMap((m) => m.partitions);
          expect(shown.length).toBe(new Set(shown).size);
          expect(shown.length).toBeLessThanOrEqual(n);
          for (const m of view.members)
            for (const k of m.partitions) expect(view.leases[String(k)]).toBe(m.id);
        },
      ),
    );
  });
});
