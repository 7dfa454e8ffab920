import { describe, expect, it } from "vitest";
import {
  chatMessage,
  publishMessage,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
} from "../support/thread-worker.ts";
import {
  BuilderProcess,
  expectMatchesCleanRun,
  faultScope,
  ownHarness,
  spawnWorker,
  startOwnNats,
} from "./support.ts";

// Fault: nats-server (file storage) stops and starts again mid-stream. The worker and the
// prompt-builder are not restarted: they reconnect by themselves, the worker goes on consuming
// where its durable consumer was, and the prompt-builder serves again.

const scope = faultScope();
const { processes } = scope;

describe("fault: nats-server restarts mid-stream", () => {
  it("the services reconnect by themselves and every thread settles to the clean run", async () => {
    const nats = (scope.nats = await startOwnNats());
    const h = (scope.h = await ownHarness(nats.url));
    const harness = h;
    const worker = spawnWorker(nats.url, harness.names, SMALL);
    processes.push(worker);
    await worker.ready();
    const builder = await BuilderProcess.start(nats.url, harness.names, SMALL);
    processes.push(builder);

    const threads = ["r1", "r2", "r3"];
    const publish = (from: number, to: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = from; i < to; i++) await publishMessage(harness, chatMessage(t, i));
        }),
      );
    await publish(0, 150);
    // Mid-stream: the worker has applied part of the first half (the second comes after).
    await waitFor("100 messages applied", async () => {
      const snapshots = await Promise.all(threads.map((t) => readSnapshot(harness, t)));
      return snapshots.reduce((n, x) => n + (x?.count ?? 0), 0) >= 100;
    });
    await nats.restart();
    // The harness reconnects like the services do (connectNats reconnects forever).
    await waitFor("the test's own connection to reconnect", async () => {
      try {
        await harness.jsm.getAccountInfo();
        return true;
      } catch {
        return false;
      }
    });
    await publish(150, 250);
    await waitSettled(harness, threads, 90_000);
    await expectMatchesCleanRun(harness, threads, SMALL);

    // Neither process was restarted, and both served through it.
    expect(worker.child.exitCode).toBeNull();
    expect(builder.child.exitCode).toBeNull();
    const prompt = await builder.get("/threads/r1/prompt?agent=north");
    expect(prompt.status).toBe(200);
    const health = await builder.get("/healthz");
    expect(health.status).toBe(200);
    expect(worker.output).not.toMatch(/consuming .* stopped/);
  });
});
