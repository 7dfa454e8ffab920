import { afterAll, describe, expect, inject, it } from "vitest";
import { SMALL, uniqueNames } from "./support/thread-worker.ts";
import { WorkerProcess, workerEnv } from "./support/worker-process.ts";

// Two single-mode workers on one stream of a server without the partition mapping: each names
// the other in one line, and the one that came second stops unless told to run beside it.
const names = uniqueNames();
const workers: WorkerProcess[] = [];
afterAll(() => {
  for (const w of workers) w.kill("SIGKILL");
});

function worker(extra: Record<string, string> = {}): WorkerProcess {
  const w = new WorkerProcess(workerEnv(inject("natsUrl"), names, SMALL, extra));
  workers.push(w);
  return w;
}

async function until(done: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("a second single-mode worker on the same stream", () => {
  it("is named by both; it stops unless OUTLINE_ALLOW_SINGLE_PEERS is on", async () => {
    const first = worker();
    await first.ready();
    const second = worker();
    const exit = await second.exited;
    expect(exit.code).toBe(1);
    expect(second.output).toMatch(
      new RegExp(`another single-mode worker \\(host \\S+, pid ${first.child.pid}, since `),
    );
    expect(second.output).toContain("This one stops (set OUTLINE_ALLOW_SINGLE_PEERS=1");
    expect(second.output).not.toContain("consuming ");
    // Its beat reached the first before it stopped: the first names it too.
    await until(() => first.output.includes(`pid ${second.child.pid}, since `));
    expect(first.output).toContain("It stops unless OUTLINE_ALLOW_SINGLE_PEERS is on");
    expect(first.output).toContain("partition mapping");

    const beside = worker({ OUTLINE_ALLOW_SINGLE_PEERS: "1" });
    await beside.ready();
    expect(beside.output).toContain("OUTLINE_ALLOW_SINGLE_PEERS is on: running beside it");
    await until(() => first.output.includes(`pid ${beside.child.pid}, since `));

    // Workers killed on this host leave their beats behind: a restart is not refused for them.
    first.kill("SIGKILL");
    beside.kill("SIGKILL");
    await Promise.all([first.exited, beside.exited]);
    const restarted = worker();
    await restarted.ready();
    expect(restarted.output).not.toContain("another single-mode worker");
  });
});
