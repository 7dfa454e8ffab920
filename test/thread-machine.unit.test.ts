import { describe, expect, it } from "vitest";
import { createActor, getNextSnapshot, type SnapshotFrom } from "xstate";
import type { SummaryJob } from "../shared/jobs.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import type { CoreSettings } from "../shared/settings.ts";
import { stateName } from "../machines/state-name.ts";
import { threadMachine, type ThreadEvent } from "../machines/thread.ts";
import { fakeSummary, makeMessage } from "./support/conversation.ts";
import { onEffects } from "./support/effects.ts";

const settings: CoreSettings = {
  line: 128,
  tail: [60, 120],
  outline: [1400, 2000],
  concurrency: 3,
};
const input = { thread: "m1", settings };
const text = (i: number) => `message ${i}: ` + "lorem ipsum dolor ".repeat(1 + (i % 9));

/** An actor whose requestSummary effect only records the job: the test answers it. */
function recordingActor(snapshot?: SnapshotFrom<typeof threadMachine>) {
  const jobs: SummaryJob[] = [];
  const changes: number[] = [];
  const actor = createActor(threadMachine, snapshot ? { snapshot, input } : { input });
  onEffects(actor, {
    requestSummary: ({ job }) => void jobs.push(job),
    snapshotChanged: (change) => void changes.push(change.count),
  });
  actor.start();
  return { actor, jobs, changes };
}

function answer(actor: ReturnType<typeof recordingActor>["actor"], job: SummaryJob): void {
  actor.send({ type: "summary.built", level: job.level, index: job.index, text: fakeSummary(job) });
}

describe("thread machine", () => {
  it("transitions are pure: idle → summarizing → cutting, without running effects", () => {
    let snap = threadMachine.resolveState({
      value: { thread: { active: "idle" }, slot: "open" },
      context: createActor(threadMachine, { input }).getSnapshot().context,
    });
    expect(stateName(snap.value)).toBe("slot.open,thread.active.idle");
    const states = new Set<string>();
    for (let i = 0; i < 20; i++) {
      // Long messages: never free, so only answers could move the outline.
      const long = `message ${i}: ` + "lorem ipsum dolor ".repeat(20);
      const event: ThreadEvent = {
        type: "message.created",
        message: makeMessage("m1", i, long),
        seq: i + 1,
      };
      snap = getNextSnapshot(threadMachine, snap, event);
      states.add(stateName(snap.value));
    }
    expect(states).toContain("slot.open,thread.active.summarizing");
    expect(states).toContain("slot.open,thread.active.cutting");
    expect(snap.context.core.count).toBe(20);
    // Jobs were handed out (inflight) but nobody answered: the outline has not moved.
    expect(snap.context.core.inflight.length).toBe(settings.concurrency);
    expect(snap.context.core.boundary).toBe(0);
    expect(snap.context.core.cuts.length).toBeGreaterThan(0);
  });

  it("asks at most `concurrency` summaries at once, and applies answers keyed by (level, index)", () => {
    const { actor, jobs, changes } = recordingActor();
    for (let i = 0; i < 40; i++) {
      actor.send({ type: "message.created", message: makeMessage("m1", i, text(i)), seq: i + 1 });
      expect(actor.getSnapshot().context.core.inflight.length).toBeLessThanOrEqual(
        settings.concurrency,
      );
    }
    expect(jobs.length).toBe(settings.concurrency);
    let answered = 0;
    while (answered < jobs.length) answer(actor, jobs[answered++] as SummaryJob);
    const core = actor.getSnapshot().context.core;
    expect(core.boundary).toBeGreaterThan(0);
    expect(stateName(actor.getSnapshot().value)).toBe("slot.open,thread.active.idle");
    expect(changes.at(-1)).toBe(40);
    // A late duplicate answer is ignored.
    const before = actor.getSnapshot().context.core;
    answer(actor, jobs[0] as SummaryJob);
    expect(actor.getSnapshot().context.core).toEqual(before);
  });

  it("a persisted snapshot survives JSON and restores mid-summarization: in-flight jobs restart, nothing built twice", () => {
    const first = recordingActor();
    for (let i = 0; i < 30; i++) {
      first.actor.send({
        type: "message.created",
        message: makeMessage("m1", i, text(i)),
        seq: i + 1,
      });
    }
    // Answer one job, leave the others in flight, then "crash".
    answer(first.actor, first.jobs[0] as SummaryJob);
    const persisted = JSON.parse(
      JSON.stringify(first.actor.getPersistedSnapshot()),
    ) as SnapshotFrom<typeof threadMachine>;
    const inflightBefore = first.actor.getSnapshot().context.core.inflight;
    expect(inflightBefore.length).toBeGreaterThan(0);
    first.actor.stop();

    const second = recordingActor(persisted);
    expect(second.actor.getSnapshot().context.core).toEqual(persisted.context.core);
    second.actor.send({ type: "jobs.resume" });
    expect(second.jobs.map((j) => `${j.level}:${j.index}`)).toEqual(
      inflightBefore.map((r) => `${r.level}:${r.index}`),
    );
    // Drive both to the end with the same summaries: same state as an uninterrupted run.
    const drive = (r: ReturnType<typeof recordingActor>, from: number) => {
      for (let i = from; i < 60; i++) {
        r.actor.send({
          type: "message.created",
          message: makeMessage("m1", i, text(i)),
          seq: i + 1,
        });
      }
      for (let k = 0; k < r.jobs.length; k++) answer(r.actor, r.jobs[k] as SummaryJob);
      return r.actor.getSnapshot().context.core;
    };
    const uninterrupted = recordingActor();
    const expected = drive(uninterrupted, 0);
    const restored = drive(second, 30);
    const { outbox: _a, ...expectedRest } = expected;
    const { outbox: _b, ...restoredRest } = restored;
    expect(restoredRest).toEqual(expectedRest);
    expect(toSnapshot(restored)).toEqual(toSnapshot(expected));
  });

  it("a redelivered message (same sequence) and a repeated id are applied once and reported", () => {
    const skipped: string[] = [];
    const actor = createActor(threadMachine, { input });
    onEffects(actor, { skipped: ({ outcome }) => void skipped.push(outcome.type) });
    actor.start();
    const m = makeMessage("m1", 0, "hello");
    actor.send({ type: "message.created", message: m, seq: 1 });
    actor.send({ type: "message.created", message: m, seq: 1 });
    actor.send({ type: "message.created", message: m, seq: 2 });
    expect(actor.getSnapshot().context.core.count).toBe(1);
    expect(skipped).toEqual(["duplicate", "duplicate"]);
  });

  it("thread.deleted erases everything and refuses later messages", () => {
    const erased: string[] = [];
    const skipped: string[] = [];
    const actor = createActor(threadMachine, { input });
    onEffects(actor, {
      erased: ({ thread }) => void erased.push(thread),
      skipped: ({ outcome }) => void skipped.push(outcome.type),
    });
    actor.start();
    for (let i = 0; i < 10; i++)
      actor.send({ type: "message.created", message: makeMessage("m1", i, text(i)), seq: i + 1 });
    actor.send({ type: "thread.deleted", at: "2026-01-02T00:00:00Z", seq: 11 });
    expect(stateName(actor.getSnapshot().value)).toBe("slot.open,thread.deleted");
    expect(erased).toEqual(["m1"]);
    const core = actor.getSnapshot().context.core;
    expect(core).toMatchObject({ deleted: true, count: 0, tail: [], outline: [], seq: 11 });
    actor.send({ type: "message.created", message: makeMessage("m1", 11, "late"), seq: 12 });
    actor.send({ type: "thread.deleted", at: "2026-01-03T00:00:00Z", seq: 13 });
    expect(skipped).toEqual(["rejected", "duplicate"]);
    expect(erased).toEqual(["m1"]);
    expect(stateName(actor.getSnapshot().value)).toBe("slot.open,thread.deleted");
    expect(actor.getSnapshot().context.core.count).toBe(0);
  });

  it("every change reports the state after its event, after the summaries it asks for (plain steps and the rest alike)", () => {
    const seen: string[] = [];
    const jobs: SummaryJob[] = [];
    const actor = createActor(threadMachine, { input });
    onEffects(actor, {
      requestSummary: ({ job }) => {
        jobs.push(job);
        seen.push(`job ${job.name}`);
      },
      snapshotChanged: (c) => void seen.push(`changed ${c.seq} ${c.count} ${c.boundary}`),
      skipped: ({ outcome }) => void seen.push(`skipped ${outcome.type}`),
    });
    actor.start();
    let plain = 0;
    for (let i = 0; i < 60; i++) {
      seen.length = 0;
      const event: ThreadEvent =
        i % 3 === 2 && jobs.length > 0
          ? (() => {
              const job = jobs.shift() as SummaryJob;
              return {
                type: "summary.built",
                level: job.level,
                index: job.index,
                text: fakeSummary(job),
              };
            })()
          : { type: "message.created", message: makeMessage("m1", i, text(i)), seq: i + 1 };
      actor.send(event);
      const core = actor.getSnapshot().context.core;
      // The change comes last and names the state the event left (after its jobs, if any).
      expect(seen.at(-1)).toBe(`changed ${core.seq} ${core.count} ${core.boundary}`);
      expect(seen.filter((e) => e.startsWith("changed"))).toHaveLength(1);
      if (seen.length === 1) plain += 1;
    }
    expect(plain).toBeGreaterThan(10);
    expect(plain).toBeLessThan(60);
    // A repeated message (still in the tail): reported as skipped, the state unchanged.
    seen.length = 0;
    const before = actor.getSnapshot().context.core;
    actor.send({ type: "message.created", message: makeMessage("m1", 58, text(58)), seq: 999 });
    expect(seen[0]).toBe("skipped duplicate");
    expect(seen.at(-1)).toBe(`changed ${before.seq} ${before.count} ${before.boundary}`);
  });

  it("the slot region: a save due, a passivation given up or for room, a drain, each end; the thread's events apply beside it", () => {
    const actor = createActor(threadMachine, { input: { ...input, hosted: true } }).start();
    const name = () => stateName(actor.getSnapshot().value);
    expect(name()).toBe("slot.open,thread.loading");
    actor.send({ type: "loaded" });
    actor.send({ type: "save.due" });
    expect(name()).toBe("slot.saving,thread.active.idle");
    actor.send({ type: "message.created", message: makeMessage("m1", 0, text(0)), seq: 1 });
    expect(name()).toBe("slot.saving,thread.active.idle");
    expect(actor.getSnapshot().context.core.count).toBe(1);
    actor.send({ type: "save.started" });
    expect(name()).toBe("slot.open,thread.active.idle");
    actor.send({ type: "passivate" });
    expect(name()).toBe("slot.passivating.idle,thread.active.idle");
    // Its final writes save what a due save would.
    actor.send({ type: "save.due" });
    expect(name()).toBe("slot.passivating.idle,thread.active.idle");
    actor.send({ type: "passivate.cancel" });
    actor.send({ type: "passivate", forRoom: true });
    expect(name()).toBe("slot.passivating.room,thread.active.idle");
    actor.send({ type: "drain" });
    expect(name()).toBe("slot.draining,thread.active.idle");
    for (const event of ["save.due", "passivate", "passivate.cancel"] as const) {
      actor.send({ type: event });
      expect(name()).toBe("slot.draining,thread.active.idle");
    }
    actor.send({ type: "end", end: "drained" });
    expect(name()).toBe("slot.ended.drained,thread.active.idle");
    // Ended is ended: another end, a drain or a save due moves nothing.
    for (const event of [{ type: "end", end: "failed" }, { type: "drain" }] as const) {
      actor.send(event);
      expect(name()).toBe("slot.ended.drained,thread.active.idle");
    }
  });

  it.each(["passivated", "drained", "lost", "failed", "abandoned"] as const)(
    "ends %s from any state of the slot but ended",
    (end) => {
      const before = [
        [],
        [{ type: "save.due" }],
        [{ type: "passivate" }],
        [{ type: "drain" }],
      ] as const;
      for (const events of before) {
        const actor = createActor(threadMachine, { input }).start();
        for (const event of events) actor.send(event);
        actor.send({ type: "end", end });
        expect(stateName(actor.getSnapshot().value)).toBe(`slot.ended.${end},thread.active.idle`);
      }
    },
  );
});
