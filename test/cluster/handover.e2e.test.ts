import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { partitionMappings } from "../../services/cluster/server-config.ts";
import { clusterView } from "../../services/cluster/view.ts";
import { memberMetricsSubject } from "../../services/thread-worker/metrics-endpoint.ts";
import {
  expectMatchesCleanRun,
  faultScope,
  ownHarness,
  spawnWorker,
  startOwnNats,
} from "../faults/support.ts";
import {
  chatMessage,
  publishMessage,
  SMALL,
  uniqueNames,
  waitFor,
  waitSettled,
} from "../support/thread-worker.ts";

// Two partitioned workers on one server with the partition mapping: they split the partitions,
// each thread's events reach one of them only (no ownership-lost loop), and a SIGTERMed worker
// hands its partitions over at once: the other holds all of them as soon as it has drained.
const scope = faultScope();
const PARTITIONS = 8;

describe("partitioned workers on one server", () => {
  it("split the partitions and hand them over on SIGTERM", async () => {
    const names = { ...uniqueNames(), partitions: PARTITIONS };
    const dir = mkdtempSync(join(tmpdir(), "outline-handover-"));
    const conf = join(dir, "nats.conf");
    writeFileSync(conf, partitionMappings(names, PARTITIONS));
    const nats = (scope.nats = await startOwnNats({ configFile: conf }));
    const h = (scope.h = await ownHarness(nats.url, names));
    const view = clusterView(h.nc, names);
    const a = spawnWorker(nats.url, names, SMALL);
    await a.ready();
    const b = spawnWorker(nats.url, names, SMALL);
    scope.processes.push(a, b);
    await b.ready();
    // The assignment gives each member its share rounded up: 4 and 4.
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
    const publish = (from: number, to: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = from; i < to; i++) await publishMessage(h, chatMessage(t, i));
        }),
      );
    await publish(0, 40);
    a.kill("SIGTERM");
    expect((await a.exited).code).toBe(0);
    // Handed over, not timed out: b holds everything once a has exited (well under failover).
    await waitFor(
      "b to hold every partition",
      async () => {
        const v = await view();
        return v.members.length === 1 && v.members[0]?.partitions.length === PARTITIONS;
      },
      3_000,
    );
    await publish(40, 60);
    await waitSettled(h, threads, 60_000);
    await expectMatchesCleanRun(h, threads, SMALL);
    for (const w of [a, b]) expect(w.output).not.toContain("written by someone else");
    expect(a.output).toMatch(/holding partitions \[[0-9,]+\] of 8/);
    expect(a.output).toContain("cluster: handed over partitions");
  });
});
