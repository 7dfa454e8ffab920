import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assignPartitions,
  liveMembers,
  OwnershipError,
  PARTITION_PROBES,
  partitionCountOf,
  partitionOf,
  partitionsOf,
  planLeases,
  type Member,
} from "../shared/ownership.ts";

const runs = Number(process.env.PROPERTY_RUNS ?? 100);

const idArb = fc.stringMatching(/^[a-z0-9]{1,10}$/);
const membersArb = (min: number, max: number) =>
  fc.uniqueArray(idArb, { minLength: min, maxLength: max }).map((ids) => ids.map((id) => ({ id })));
/** Enough partitions per member for the movement bound (docs/scale-out.md: 4 or more each). */
const layoutArb = membersArb(1, 8).chain((members) =>
  fc.record({
    members: fc.constant(members),
    partitions: fc.integer({ min: 4 * (members.length + 1), max: 256 }),
  }),
);

const moved = (a: readonly string[], b: readonly string[]) =>
  a.filter((owner, p) => owner !== b[p]).length;

describe("partitionOf", () => {
  it("matches nats-server's {{partition(4,1)}} on threads it mapped", () => {
    // Observed on nats-server 2.9.10 with the mapping in test/cluster: chat.t1.message.created
    // was stored as chat.t1.message.created.2, and so on.
    const seen = { t1: 2, t2: 3, abc: 3, "thread-0": 0, "thread-1": 3, "thread-2": 2 };
    for (const [thread, p] of Object.entries(seen)) expect(partitionOf(thread, 4), thread).toBe(p);
  });

  it("stays within [0, n)", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/),
        fc.integer({ min: 1, max: 4096 }),
        (t, n) => {
          const p = partitionOf(t, n);
          return Number.isInteger(p) && p >= 0 && p < n;
        },
      ),
      { numRuns: runs },
    );
  });
});

describe("partitionCountOf", () => {
  const probed = (n: number) => new Map(PARTITION_PROBES.map((t) => [t, partitionOf(t, n)]));

  it("tells every count up to 4,096 from the probes' partitions", () => {
    const signatures = new Set<string>();
    for (let n = 1; n <= 4096; n++) signatures.add([...probed(n).values()].join(","));
    expect(signatures.size).toBe(4096);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4096 }),
        (n) => partitionCountOf(probed(n), 4096) === n,
      ),
      { numRuns: runs },
    );
  });

  it("finds none when a partition fits no count", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4096 }),
        fc.nat(PARTITION_PROBES.length - 1),
        (n, i) => {
          const seen = probed(n);
          const token = PARTITION_PROBES[i] ?? "";
          // Out of range for n and for every smaller count.
          seen.set(token, 5000);
          return partitionCountOf(seen, 4096) === undefined;
        },
      ),
      { numRuns: runs },
    );
  });
});

describe("assignPartitions", () => {
  it("gives each partition exactly one owner among the members, evenly", () => {
    fc.assert(
      fc.property(membersArb(1, 12), fc.integer({ min: 1, max: 300 }), (members, n) => {
        const owners = assignPartitions(n, members);
        expect(owners).toHaveLength(n);
        const ids = new Set(members.map((m) => m.id));
        for (const owner of owners) expect(ids.has(owner)).toBe(true);
        const counts = members.map((m) => partitionsOf(owners, m.id).length);
        expect(counts.reduce((a, b) => a + b, 0)).toBe(n);
        expect(Math.max(...counts)).toBeLessThanOrEqual(Math.ceil(n / members.length));
        expect(Math.min(...counts)).toBeGreaterThanOrEqual(Math.floor(n / members.length));
      }),
      { numRuns: runs },
    );
  });

  it("does not depend on the order members are listed in", () => {
    fc.assert(
      fc.property(
        membersArb(1, 8).chain((m) =>
          fc.tuple(fc.constant(m), fc.shuffledSubarray(m, { minLength: m.length })),
        ),
        fc.integer({ min: 1, max: 100 }),
        ([members, shuffled], n) => {
          expect(assignPartitions(n, shuffled)).toEqual(assignPartitions(n, members));
        },
      ),
      { numRuns: runs },
    );
  });

  it("moves about the joiner's share when a member joins", () => {
    fc.assert(
      fc.property(layoutArb, idArb, ({ members, partitions }, joiner) => {
        fc.pre(!members.some((m) => m.id === joiner));
        const before = assignPartitions(partitions, members);
        const after = assignPartitions(partitions, [...members, { id: joiner }]);
        const share = Math.ceil(partitions / (members.length + 1));
        // The others are full at `share` each: the joiner takes what is left, at least.
        expect(partitionsOf(after, joiner).length).toBeGreaterThanOrEqual(
          partitions - members.length * share,
        );
        expect(moved(before, after)).toBeLessThanOrEqual(3 * share);
      }),
      { numRuns: runs },
    );
  });

  it("moves about the leaver's share when a member leaves", () => {
    fc.assert(
      fc.property(layoutArb, fc.nat(), ({ members, partitions }, pick) => {
        fc.pre(members.length >= 2);
        const gone = members[pick % members.length] as Member;
        const before = assignPartitions(partitions, members);
        const after = assignPartitions(
          partitions,
          members.filter((m) => m !== gone),
        );
        const theirs = partitionsOf(before, gone.id);
        for (const p of theirs) expect(after[p]).not.toBe(gone.id);
        expect(moved(before, after)).toBeLessThanOrEqual(3 * theirs.length);
      }),
      { numRuns: runs },
    );
  });

  it("gives a member with twice the capacity about twice the partitions", () => {
    const owners = assignPartitions(90, [{ id: "a", capacity: 2 }, { id: "b" }, { id: "c" }]);
    expect(partitionsOf(owners, "a").length).toBeGreaterThanOrEqual(44);
    expect(partitionsOf(owners, "a").length).toBeLessThanOrEqual(45);
    for (const m of ["b", "c"]) expect(partitionsOf(owners, m).length).toBeLessThanOrEqual(23);
  });

  it("refuses bad input with a clear error", () => {
    expect(() => assignPartitions(0, [{ id: "a" }])).toThrow(OwnershipError);
    expect(() => assignPartitions(4, [{ id: "a" }, { id: "a" }])).toThrow(/listed twice/);
    expect(() => assignPartitions(4, [{ id: "a", capacity: 0 }])).toThrow(/capacity/);
    expect(assignPartitions(4, [])).toEqual([]);
  });
});

describe("liveMembers", () => {
  it("keeps members heard from within the failover time that are not leaving", () => {
    const live = liveMembers(
      [
        { id: "a", at: 1_000 },
        { id: "b", at: 4_000 },
        { id: "c", at: 9_000, leaving: true },
        { id: "d", at: 9_000, capacity: 2 },
      ],
      9_000,
      5_000,
    );
    expect(live).toEqual([{ id: "b" }, { id: "d", capacity: 2 }]);
  });
});

describe("planLeases", () => {
  /** Runs every member's plan until nothing changes: releases first, then acquisitions. */
  function settle(
    partitions: number,
    live: Member[],
    holders: Map<number, string>,
    onStep?: (holders: Map<number, string>) => void,
  ): Map<number, string> {
    for (let round = 0; round < 10; round++) {
      let changed = false;
      for (const m of live) {
        for (const p of planLeases(m.id, partitions, live, holders).release) {
          holders.delete(p);
          changed = true;
        }
      }
      for (const m of live) {
        for (const p of planLeases(m.id, partitions, live, holders).acquire) {
          if (holders.get(p) === m.id) continue;
          holders.set(p, m.id);
          changed = true;
          onStep?.(holders);
        }
      }
      if (!changed) return holders;
    }
    throw new Error("leases did not settle in 10 rounds");
  }

  it("converges to the assignment from any holders, never two live holders of one partition", () => {
    fc.assert(
      fc.property(
        // Fewer partitions here: each step of each member recomputes the assignment.
        membersArb(1, 6).chain((members) =>
          fc.record({ members: fc.constant(members), partitions: fc.integer({ min: 1, max: 48 }) }),
        ),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom("gone", "a", "b", "0"))),
        ({ members, partitions }, start) => {
          const holders = new Map<number, string>();
          for (const [p, who] of start) holders.set(p % partitions, who);
          const ids = new Set(members.map((m) => m.id));
          const settled = settle(partitions, members, holders, (h) => {
            // A Map holds one holder per partition; what matters is that a live member only
            // took a lease that was free or held by a member that is gone.
            for (const who of h.values()) expect(typeof who).toBe("string");
          });
          const owners = assignPartitions(partitions, members);
          for (let p = 0; p < partitions; p++) expect(settled.get(p)).toBe(owners[p]);
          for (const who of settled.values()) expect(ids.has(who)).toBe(true);
        },
      ),
      { numRuns: runs },
    );
  });

  it("waits for a live holder to let go instead of taking its partition", () => {
    const live = [{ id: "a" }, { id: "b" }];
    const owners = assignPartitions(8, live);
    const bs = partitionsOf(owners, "b");
    const holders = new Map<number, string>(bs.map((p) => [p, "a"]));
    const plan = planLeases("b", 8, live, holders);
    expect(plan.waiting).toEqual(bs);
    expect(planLeases("a", 8, live, holders).release).toEqual(bs);
    // While a is leaving it owns nothing but keeps its leases until it lets go.
    const leaving = planLeases("b", 8, [{ id: "b" }], holders, new Set(["a", "b"]));
    expect(leaving.acquire).toEqual(partitionsOf(owners, "a"));
    expect(leaving.waiting).toEqual(bs);
    expect(planLeases("a", 8, [{ id: "b" }], holders, new Set(["a", "b"])).release).toEqual(bs);
    // Once a is gone, b takes them at once.
    expect(planLeases("b", 8, [{ id: "b" }], holders).acquire).toEqual([...Array(8).keys()]);
  });
});
