import { createActor, type Snapshot } from "xstate";
import {
  migrateSnapshot,
  threadMachine,
  type PersistedThreadSnapshot,
} from "../../machines/thread.ts";
import type { Message } from "../../shared/events.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import type { ThreadState } from "../../shared/thread.ts";
import {
  parsePersisted,
  type PersistedActor,
  type PersistedThread,
} from "../../services/thread-worker/actor-store.ts";
import { fakeSummary, makeMessage } from "./conversation.ts";
import { onEffects } from "./effects.ts";

/** A persisted actor record as some version of the worker stored it, and what it leads to. */
export interface ActorFixture {
  captured: { by: string; value: string };
  /** The KV record (tail messages and node texts stripped, as stored). */
  record: PersistedThread;
  /** The tail's messages, as restoreRecord reads them back from CHAT. */
  messages: Message[];
  /** Built nodes' texts by `level:index`, as restoreRecord reads them back from HISTORY. */
  texts: Record<string, string>;
  /** The thread after `continueRun`. */
  expected: { snapshot: OutlineSnapshot; count: number; boundary: number };
}

export const fixtureSettings: CoreSettings = {
  line: 96,
  tail: [60, 120],
  outline: [600, 900],
  concurrency: 2,
  group: 2,
};

export const fixtureText = (i: number) =>
  `message ${i}: ` + "lorem ipsum dolor sit amet ".repeat(1 + (i % 5));

/**
 * Restores `persisted`, resumes its jobs, then appends 40 more messages, answering every job as
 * it comes: the thread any version of the machine must reach from the same record.
 */
export function continueRun(
  persisted: PersistedActor,
  thread: string,
  via: "snapshot" | "loaded" = "snapshot",
): ThreadState {
  const jobs: SummaryJob[] = [];
  const copy = JSON.parse(JSON.stringify(persisted)) as PersistedThreadSnapshot;
  const actor =
    via === "snapshot"
      ? createActor(threadMachine, {
          input: { thread, settings: fixtureSettings },
          snapshot: migrateSnapshot(copy) as unknown as Snapshot<unknown>,
        })
      : createActor(threadMachine, { input: { thread, settings: fixtureSettings, hosted: true } });
  onEffects(actor, { requestSummary: ({ job }) => void jobs.push(job) });
  actor.start();
  if (via === "loaded") actor.send({ type: "loaded", core: copy.context.core });
  const drain = () => {
    while (jobs.length > 0) {
      const job = jobs.shift() as SummaryJob;
      actor.send({
        type: "summary.built",
        level: job.level,
        index: job.index,
        text: fakeSummary(job),
      });
    }
  };
  actor.send({ type: "jobs.resume" });
  drain();
  const from = persisted.context.core.count;
  const seq = persisted.context.core.seq;
  for (let i = 0; i < 40; i++) {
    actor.send({
      type: "message.created",
      message: makeMessage(thread, from + i, fixtureText(from + i)),
      seq: seq + i + 1,
    });
    drain();
  }
  const core = actor.getSnapshot().context.core;
  actor.stop();
  return core;
}

/** The record as the worker reads it back: parsed, tail messages and node texts put back. */
export function restoredActor(fixture: ActorFixture): PersistedActor {
  const bytes = new TextEncoder().encode(JSON.stringify(fixture.record));
  const record = parsePersisted(fixture.record.thread, bytes, "fixture-actors");
  const core = record.snapshot.context.core;
  const byId = new Map(fixture.messages.map((m) => [m.id, m]));
  const tail = core.tail.map((e) => ({ ...e, message: byId.get(e.message.id) as Message }));
  const nodes = core.nodes.map((level) => ({
    base: level.base,
    items: level.items.map((n) =>
      n?.text === "" ? { ...n, text: fixture.texts[`${n.level}:${n.index}`] ?? "" } : n,
    ),
  }));
  return { ...record.snapshot, context: { core: { ...core, tail, nodes } } };
}
