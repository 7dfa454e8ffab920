import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StorageType } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  chatMessage,
  publishMessage,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
  type Harness,
} from "../support/thread-worker.ts";
import {
  expectMatchesCleanRun,
  faultScope,
  ownHarness,
  spawnWorker,
  startOwnNats,
} from "./support.ts";

// Fault: JetStream's file store is full (max_file_store reached; a filler stream takes the room).
// The platform's publish fails with an error saying so; the worker, holding events it cannot
// make durable (HISTORY nodes, actor state, snapshots), retries in place with the server's reason
// in its log, acknowledges nothing it has not stored, and corrupts nothing: once room is made,
// every thread settles to the clean run.

const scope = faultScope();
const { processes } = scope;

/** Fills the store with a stream of its own until the server refuses; returns its refusal. */
async function fillStore(harness: Harness): Promise<Error> {
  await harness.jsm.streams.add({
    name: "FILLER",
    subjects: ["filler.>"],
    storage: StorageType.File,
  });
  const chunk = new Uint8Array(64 * 1024).fill(0x66);
  for (let i = 0; i < 10_000; i++) {
    try {
      await harness.js.publish(`filler.${i}`, chunk, { timeout: 5_000 });
    } catch (err) {
      return err as Error;
    }
  }
  throw new Error("the store never filled up: max_file_store is not in effect");
}

describe("fault: the JetStream store is full", () => {
  it("a clear error, nothing acknowledged that was not stored, no corrupt state; catches up once room is made", async () => {
    const conf = join(mkdtempSync(join(tmpdir(), "outline-conf-")), "small-store.conf");
    writeFileSync(conf, "jetstream { max_file_store: 8MB }\n");
    const nats = (scope.nats = await startOwnNats({ configFile: conf }));
    const h = (scope.h = await ownHarness(nats.url));
    const harness = h;
    const threads = ["d1", "d2"];
    const publish = (from: number, to: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = from; i < to; i++) await publishMessage(harness, chatMessage(t, i));
        }),
      );

    const first = spawnWorker(nats.url, harness.names, SMALL);
    processes.push(first);
    await first.ready();
    await publish(0, 40);
    await waitSettled(harness, threads);
    first.kill("SIGTERM");
    expect((await first.exited).code).toBe(0);

    // Events stored while no worker runs, then the store fills up.
    await publish(40, 140);
    const refusal = await fillStore(harness);
    expect(refusal.message).toMatch(/insufficient resources|storage|maximum bytes/i);
    const platformError = await publishMessage(harness, chatMessage("d1", 999), {
      record: false,
    }).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(platformError?.message).toMatch(/insufficient resources|storage|maximum bytes/i);

    // The worker cannot store what those events produce: it says why and keeps trying.
    const worker = spawnWorker(nats.url, harness.names, SMALL);
    processes.push(worker);
    await worker.ready();
    await waitFor(
      "the worker to report the full store",
      () =>
        /failed \(attempt \d+\), retrying/.test(worker.output) &&
        /insufficient resources/i.test(worker.output),
      30_000,
    );
    expect(worker.child.exitCode).toBeNull();
    // Nothing half-written: the stored snapshots still reflect at most what was durable, and the
    // consumer has not acknowledged the events whose effects are not stored.
    for (const t of threads) {
      const snapshot = await readSnapshot(harness, t);
      expect(snapshot?.count ?? 0).toBeLessThan(140);
    }
    const consumer = await harness.jsm.consumers.info(
      harness.names.chatStream,
      harness.names.workerDurable,
    );
    expect(consumer.num_ack_pending + consumer.num_pending).toBeGreaterThan(0);

    // Room again: everything catches up, exactly as the clean run says.
    await harness.jsm.streams.delete("FILLER");
    await waitSettled(harness, threads, 90_000);
    await expectMatchesCleanRun(harness, threads, SMALL);
    console.log(`store full: "${refusal.message}"`);
  });
});
