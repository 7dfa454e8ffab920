import { createActor } from "xstate";
import { stateName } from "../machines/state-name.ts";
import { describe, expect, it } from "vitest";
import {
  migrateSnapshot,
  newThreadSnapshot,
  threadMachine,
  type PersistedThreadSnapshot,
} from "../machines/thread.ts";
import { persistedSnapshotOf, type ShellKey } from "../services/thread-worker/persisted-shell.ts";
import { toPersisted, type PersistedActor } from "../services/thread-worker/actor-store.ts";
import { fakeSummary, makeMessage } from "./support/conversation.ts";
import type { SummaryJob } from "../shared/jobs.ts";
import { onEffects } from "./support/effects.ts";

const settings = {
  line: 128,
  tail: [60, 120] as [number, number],
  outline: [1400, 2000] as [number, number],
  concurrency: 3,
};

describe("persistedSnapshotOf", () => {
  it("is the actor's getPersistedSnapshot() after every event, XState's part reused while unchanged", () => {
    const jobs: SummaryJob[] = [];
    const actor = createActor(threadMachine, { input: { thread: "p1", settings } });
    onEffects(actor, { requestSummary: ({ job }) => void jobs.push(job) });
    actor.start();
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
      values.add(stateName(actor.getSnapshot().value));
    }
    expect(values).toContain("slot.open,thread.deleted");
    expect(values.size).toBeGreaterThan(2);
    expect(reused).toBeGreaterThan(40);
  });
});

/** The persisted JSON, but for the `hosted` flag the two actors were made with. */
const withoutHost = (persisted: unknown): string => {
  const { context, ...rest } = persisted as { context: Record<string, unknown> };
  return JSON.stringify({ ...rest, context: { ...context, hosted: undefined } });
};

describe("a new thread's actor", () => {
  it("loaded with nothing, starts where an actor that needs no load does, and goes on the same", () => {
    const actors = [
      createActor(threadMachine, { input: { thread: "f1", settings } }),
      createActor(threadMachine, { input: { thread: "f1", settings, hosted: true } }),
    ].map((actor) => actor.start());
    const [plain, loaded] = actors as [(typeof actors)[0], (typeof actors)[0]];
    expect(stateName(loaded.getSnapshot().value)).toBe("slot.open,thread.loading");
    loaded.send({ type: "loaded" });
    expect(withoutHost(loaded.getPersistedSnapshot())).toBe(
      withoutHost(plain.getPersistedSnapshot()),
    );
    for (let i = 0; i < 40; i++) {
      const text = `message ${i}: ` + "lorem ipsum dolor ".repeat(1 + (i % 9));
      for (const actor of actors)
        actor.send({ type: "message.created", message: makeMessage("f1", i, text), seq: i + 1 });
      expect(loaded.getSnapshot().value).toEqual(plain.getSnapshot().value);
    }
    expect(plain.getSnapshot().matches({ thread: { active: "idle" } })).toBe(false);
    expect(withoutHost(loaded.getPersistedSnapshot())).toBe(
      withoutHost(plain.getPersistedSnapshot()),
    );
  });
});

describe("a hosted thread never stored", () => {
  it("starts from the snapshot `loaded` with nothing leaves, and goes on the same", () => {
    const input = { thread: "n1", settings, hosted: true, backlogLimit: 500 };
    const loaded = createActor(threadMachine, { input }).start();
    loaded.send({ type: "loaded" });
    const fresh = createActor(threadMachine, { input, snapshot: newThreadSnapshot(input) });
    const actors = [loaded, fresh.start()];
    const same = () =>
      expect(JSON.stringify(fresh.getPersistedSnapshot())).toBe(
        JSON.stringify(loaded.getPersistedSnapshot()),
      );
    same();
    for (let i = 0; i < 20; i++) {
      const text = `message ${i}: ` + "lorem ipsum dolor ".repeat(1 + (i % 9));
      for (const actor of actors)
        actor.send({ type: "message.created", message: makeMessage("n1", i, text), seq: i + 1 });
      expect(fresh.getSnapshot().value).toEqual(loaded.getSnapshot().value);
    }
    expect(stateName(fresh.getSnapshot().value)).not.toBe("slot.open,thread.active.idle");
    same();
  });
});

describe("a step's effects", () => {
  it("are in the context after the event that made them, and never in a stored record", () => {
    const actor = createActor(threadMachine, { input: { thread: "e1", settings } }).start();
    expect(actor.getSnapshot().context.effects).toEqual([]);
    actor.send({ type: "message.created", message: makeMessage("e1", 0, "hello"), seq: 1 });
    expect(actor.getSnapshot().context.effects).toEqual([
      { type: "snapshotChanged", thread: "e1", seq: 1, count: 1, boundary: 0 },
    ]);
    const record = toPersisted("e1", 1, false, persistedSnapshotOf(actor, {}));
    expect(Object.keys(record.snapshot.context).sort()).toEqual(
      ["backlogLimit", "core", "hosted", "version", "waitingFor"].sort(),
    );
    // XState's own persisted form keeps them: a restore starts without.
    const restored = migrateSnapshot(
      JSON.parse(JSON.stringify(actor.getPersistedSnapshot())) as PersistedThreadSnapshot,
    );
    expect(restored.context.effects).toEqual([]);
  });
});
