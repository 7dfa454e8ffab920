import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { partitionMappings } from "../../services/cluster/server-config.ts";
import { clusterView } from "../../services/cluster/view.ts";
import { subjects } from "../../services/nats/subjects.ts";
import { chatMessage, publishMessage, SMALL, waitSettled } from "../support/thread-worker.ts";
import {
  expectMatchesCleanRun,
  faultScope,
  ownHarness,
  spawnWorker,
  startOwnNats,
} from "./support.ts";

// What `npm start` twice does to a `.data/` an older `npm start` made: its server comes back
// with the partition mapping in its config, and two workers not told OUTLINE_PARTITIONS take
// the count from the server, split the threads, and keep every event stored before and after.

const scope = faultScope();
const threads = ["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"];
const dir = mkdtempSync(join(tmpdir(), "outline-second-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a second instance on npm start's server", () => {
  it("takes the partition count from the mapping and shares the threads, old events kept", async () => {
    const configFile = join(dir, "nats.conf");
    writeFileSync(configFile, "");
    const nats = (scope.nats = await startOwnNats({ configFile }));
    const h = (scope.h = await ownHarness(nats.url));
    const publish = (from: number, to: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = from; i < to; i++) await publishMessage(h, chatMessage(t, i));
        }),
      );
    // Stored by a server without the mapping, as an older npm start's .data holds them.
    await publish(0, 15);
    writeFileSync(configFile, partitionMappings(h.names, 8));
    await nats.restart();

    const a = spawnWorker(nats.url, h.names, SMALL);
    scope.processes.push(a);
    await a.ready();
    const b = spawnWorker(nats.url, h.names, SMALL);
    scope.processes.push(b);
    await b.ready();
    for (const w of [a, b]) {
      expect(w.output).toContain("the server maps");
      expect(w.output).toContain("onto 8 partitions (OUTLINE_PARTITIONS unset)");
      expect(w.memberId()).toBeDefined();
    }
    await publish(15, 40);
    // Read as a partitioned reader: events in both forms.
    const names = { ...h.names, partitions: 8 };
    const both = { ...h, names, s: subjects(names) };
    await waitSettled(both, threads, 120_000);
    await expectMatchesCleanRun(both, threads, SMALL);

    const view = await clusterView(h.nc, names)();
    expect(
      view.members
        .filter((m) => m.live)
        .map((m) => m.id)
        .sort(),
    ).toEqual([a.memberId(), b.memberId()].sort());
    for (const m of view.members) expect(m.partitions.length).toBe(4);
    expect(a.output + b.output).not.toContain("written by someone else");
  });
});
