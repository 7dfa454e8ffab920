import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { subjects } from "../../services/nats/subjects.ts";
import { expectMatchesCleanRun, faultScope, ownHarness, spawnWorker } from "../faults/support.ts";
import { SMALL, uniqueNames, waitSettled } from "../support/thread-worker.ts";
import { mappedNats, publishRange } from "./instance.ts";

// The upgrade of docs/scale-out.md: a CHAT stream written and consumed by one instance in
// single mode, with events still unconsumed when it stops; the server restarted with the
// partition mapping; instances restarted partitioned. The stream gains the mapped form in place,
// the unconsumed old-form events are applied (read by partition 0's holder), new events arrive
// in the mapped form, and every thread ends equal to a clean run on its whole log.
const scope = faultScope();
const PARTITIONS = 4;

describe("upgrading a single-instance CHAT stream to partitions", () => {
  it("applies every event stored before and after the switch, once, in order", async () => {
    const single = uniqueNames();
    const names = { ...single, partitions: PARTITIONS };
    const { nats, map } = await mappedNats(scope, names, PARTITIONS, false);
    const h = (scope.h = await ownHarness(nats.url, single));
    const threads = Array.from({ length: 12 }, (_, i) => `u${i}`);

    const old = spawnWorker(nats.url, single, SMALL);
    scope.processes.push(old);
    await old.ready();
    await publishRange(h, threads, 0, 20);
    await waitSettled(h, threads, 60_000);
    old.kill("SIGTERM");
    await old.exited;
    // Published while no instance runs: stored in the old form, never consumed by the old durable.
    await publishRange(h, threads, 20, 30);

    map();
    await h.nc.close();
    await nats.restart();
    const h2 = (scope.h = await ownHarness(nats.url, names));
    h2.log = h.log;
    const a = spawnWorker(nats.url, names, SMALL);
    const b = spawnWorker(nats.url, names, SMALL);
    scope.processes.push(a, b);
    await a.ready();
    await b.ready();
    await publishRange(h2, threads, 30, 45);
    await waitSettled(h2, threads, 90_000).catch((err: unknown) => {
      throw new Error(
        `${(err as Error).message}\nA:\n${a.output.slice(-2_000)}\nB:\n${b.output.slice(-2_000)}`,
      );
    });
    await expectMatchesCleanRun(h2, threads, SMALL);

    const jsm = await jetstreamManager(h2.nc);
    const info = await jsm.streams.info(names.chatStream);
    expect(info.config.subjects).toEqual(subjects(names).chatStreamSubjects);
    const s = subjects(names);
    const [plain, mapped] = s.stored("u0", "message.created");
    const log = h2.log.get("u0") ?? [];
    expect(
      (await jsm.streams.getMessage(names.chatStream, { seq: log[25]?.seq ?? 0 }))?.subject,
    ).toBe(plain);
    expect(
      (await jsm.streams.getMessage(names.chatStream, { seq: log[35]?.seq ?? 0 }))?.subject,
    ).toBe(mapped);
  });
});
