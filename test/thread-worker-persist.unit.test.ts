import { createActor, type Snapshot } from "xstate";
import { describe, expect, it } from "vitest";
import { threadMachine } from "../machines/thread.ts";
import {
  freshSnapshot,
  persistedSnapshotOf,
  type ShellKey,
} from "../services/thread-worker/thread-slot.ts";
import type { PersistedActor } from "../services/thread-worker/actor-store.ts";
import { fakeSummary, makeMessage } from "./support/conversation.ts";
import type { SummaryJob } from "../shared/jobs.ts";

const settings = {
  line: 128,
  tail: [60, 120] as [number, number],
  outline: [1400, 2000] as [number, number],
  concurrency: 3,
};

describe("persistedSnapshotOf", () => {
  it("is the actor's getPersistedSnapshot() after every event, XState's part reused while unchanged", () => {
    const jobs: SummaryJob[] = [];
    const actor = createActor(
      threadMachine.provide({ actions: { requestSummary: (_, { job }) => void jobs.push(job) } }),
      { input: { thread: "p1", settings } },
    ).start();
    const cache: { key?: ShellKey; shell?: PersistedActor } = {};
    const values = new Set<string>();
    let reused = 0;
    for (let i = 0; i < 80; i++) {
      if (i % 4 === 3 && jobs.length > 0) {
        const job = jobs.shift() as SummaryJob;
        actor.send({
          type: "summary.built",
          level: job.level,
          index: job.index,
          text: fakeSummary(job),
        });
      } else {
        const text = `message ${i}: ` + "lorem ipsum dolor ".repeat(1 + (i % 9));
        actor.send({ type: "message.created", message: makeMessage("p1", i, text), seq: i + 1 });
      }
      if (i === 70) actor.send({ type: "thread.deleted", at: "2026-01-02T00:00:00Z", seq: 100 });
      const shell = cache.shell;
      const ours = persistedSnapshotOf(actor, cache);
      if (cache.shell === shell) reused += 1;
      // Same JSON, key order included, as XState's own.
      expect(JSON.stringify(ours)).toBe(JSON.stringify(actor.getPersistedSnapshot()));
      expect(ours.context).toBe(actor.getSnapshot().context);
      values.add(String(actor.getSnapshot().value));
    }
    expect(values).toContain("deleted");
    expect(values.size).toBeGreaterThan(2);
    expect(reused).toBeGreaterThan(40);
  });
});

describe("freshSnapshot", () => {
  it("starts a new thread's actor where the machine's initial transition does, and it goes on the same", () => {
    const fresh = freshSnapshot("f1", settings);
    // Made per actor: nothing of it is shared with the next thread's.
    const other = freshSnapshot("f2", settings);
    expect(other.context.core.thread).toBe("f2");
    expect(other.historyValue).not.toBe(fresh.historyValue);
    const actors = [
      createActor(threadMachine, { input: { thread: "f1", settings } }),
      createActor(threadMachine, {
        input: { thread: "f1", settings },
        snapshot: fresh as unknown as Snapshot<unknown>,
      }),
    ].map((actor) => actor.start());
    const [plain, restored] = actors as [(typeof actors)[0], (typeof actors)[0]];
    expect(JSON.stringify(restored.getPersistedSnapshot())).toBe(
      JSON.stringify(plain.getPersistedSnapshot()),
    );
    for (let i = 0; i < 40; i++) {
      const text = `message ${i}: ` + "lorem ipsum dolor ".repeat(1 + (i % 9));
      for (const actor of actors)
        actor.send({ type: "message.created", message: makeMessage("f1", i, text), seq: i + 1 });
      expect(restored.getSnapshot().value).toBe(plain.getSnapshot().value);
    }
    expect(plain.getSnapshot().value).not.toBe("idle");
    expect(JSON.stringify(restored.getPersistedSnapshot())).toBe(
      JSON.stringify(plain.getPersistedSnapshot()),
    );
  });
});
