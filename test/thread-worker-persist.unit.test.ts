import { createActor } from "xstate";
import { describe, expect, it } from "vitest";
import { threadMachine } from "../machines/thread.ts";
import { persistedSnapshotOf, type ShellKey } from "../services/thread-worker/thread-slot.ts";
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
