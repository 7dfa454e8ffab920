import { describe, expect, it } from "vitest";
import { clusterView } from "../../services/cluster/view.ts";
import { memberMetricsSubject } from "../../services/thread-worker/metrics-endpoint.ts";
import { expectMatchesCleanRun, faultScope, ownHarness, spawnWorker } from "../faults/support.ts";
import { SMALL, uniqueNames, waitFor, waitSettled } from "../support/thread-worker.ts";
import { START_DEADLINE_MS } from "../support/service-process.ts";
import { leaseMoves, mappedNats, publishRange, watchLeases } from "./instance.ts";

// Two partitioned workers on one server with the partition mapping: they split the partitions,
// each thread's events reach one of them only (no ownership-lost loop), and a SIGTERMed worker
// hands its partitions over at once: the other holds all of them as soon as it has drained.
const scope = faultScope();
const PARTITIONS = 8;

describe("partitioned workers on one server", () => {
  it("split the partitions and hand them over on SIGTERM", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const { nats } = await mappedNats(scope, names, PARTITIONS);
    const h = (scope.h = await ownHarness(nats.url, names));
    const view = clusterView(h.nc, names);
    const a = spawnWorker(nats.url, names, SMALL);
    scope.processes.push(a);
    await a.ready();
    const b = spawnWorker(nats.url, names, SMALL);
    scope.processes.push(b);
    await b.ready();
    // The assignment gives each member its share: 4 and 4.
    await waitFor("the members to split the partitions", async () => {
      const v = await view();
      return v.members.length === 2 && v.members.every((m) => m.partitions.length === 4);
    });
    const split = await view();
    expect(split.partitions).toBe(PARTITIONS);
    expect(Object.keys(split.leases)).toHaveLength(PARTITIONS);
    // Metrics per member: each answers on the members subject with its samples labelled.
    const answers = await h.nc.requestMany(`${memberMetricsSubject(names)}`, undefined, {
      strategy: "timer",
      maxWait: 1_000,
    });
    const labelled: string[] = [];
    for await (const m of answers) labelled.push(/member="([^"]+)"/.exec(m.string())?.[1] ?? "");
    expect(labelled.sort()).toEqual(split.members.map((m) => m.id).sort());

    const threads = Array.from({ length: 20 }, (_, i) => `h${i}`);
    const leases = await watchLeases(h);
    scope.stops.push(leases.stop);
    await publishRange(h, threads, 0, 40);
    a.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    await waitFor(
      "b to hold every partition",
      async () => {
        const v = await view();
        return v.members.length === 1 && v.members[0]?.partitions.length === PARTITIONS;
      },
      START_DEADLINE_MS,
    );
    // Handed over, not timed out: a let each of its partitions go and b took it; none was taken
    // from a holder that fell silent.
    const moves = leaseMoves(leases.events, [a.output, b.output]);
    expect(moves.map((m) => [m.partition, m.from, m.to, m.takenOver]).sort()).toEqual(
      (split.members.find((m) => m.id === a.memberId())?.partitions ?? [])
        .map((k) => [k, a.memberId(), b.memberId(), false])
        .sort(),
    );
    console.log(`release → take: ${moves.map((m) => `${m.partition}: ${m.ms} ms`).join(", ")}`);
    await publishRange(h, threads, 40, 60);
    await waitSettled(h, threads, START_DEADLINE_MS);
    await expectMatchesCleanRun(h, threads, SMALL);
    for (const w of [a, b]) expect(w.output).not.toContain("written by someone else");
    expect(a.output).toMatch(/holding partitions \[[0-9,]+\] of 8/);
    expect(a.output).toContain("cluster: handed over partitions");
  });
});
