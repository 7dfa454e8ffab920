/**
 * Captures persisted thread-actor records from the machine as it is, for the upgrade test
 * (test/actor-upgrade.unit.test.ts): `npx tsx test/support/capture-actor-snapshots.ts` writes
 * them for the current SNAPSHOT_VERSION. Run once per version; each version's fixtures stay as
 * that code saved them (v1: this script at b02edb7, before the machine became a chart).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createActor } from "xstate";
import { SNAPSHOT_VERSION, threadMachine } from "../../machines/thread.ts";
import { stateName } from "../../machines/state-name.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import { toSnapshot } from "../../shared/snapshot.ts";
import { toPersisted, type PersistedActor } from "../../services/thread-worker/actor-store.ts";
import { continueRun, fixtureSettings, fixtureText, type ActorFixture } from "./actor-fixture.ts";
import { fakeSummary, makeMessage } from "./conversation.ts";
import { onEffects } from "./effects.ts";

const out = new URL(`../fixtures/actor-snapshots/v${SNAPSHOT_VERSION}/`, import.meta.url);
mkdirSync(out, { recursive: true });

function capture(
  name: string,
  drive: (send: Send, jobs: SummaryJob[], value: () => string) => void,
): void {
  const jobs: SummaryJob[] = [];
  const actor = createActor(threadMachine, { input: { thread: name, settings: fixtureSettings } });
  onEffects(actor, { requestSummary: ({ job }) => void jobs.push(job) });
  actor.start();
  drive(
    (event) => actor.send(event),
    jobs,
    () => stateName(actor.getSnapshot().value),
  );
  const persisted = actor.getPersistedSnapshot() as unknown as PersistedActor;
  const core = persisted.context.core;
  const record = toPersisted(
    name,
    core.seq,
    false,
    JSON.parse(JSON.stringify(persisted)) as PersistedActor,
  );
  const value = stateName(actor.getSnapshot().value);
  actor.stop();
  // What the machine of today makes of the restored record: resumed, answered, fed more.
  const after = continueRun(persisted, name);
  const fixture: ActorFixture = {
    captured: { by: `machines/thread.ts, snapshot version ${SNAPSHOT_VERSION}`, value },
    record,
    messages: core.tail.map((e) => e.message),
    texts: Object.fromEntries(
      core.nodes.flatMap((l) =>
        l.items.flatMap((n) => (n ? [[`${n.level}:${n.index}`, n.text]] : [])),
      ),
    ),
    expected: { snapshot: toSnapshot(after), count: after.count, boundary: after.boundary },
  };
  writeFileSync(new URL(`${name}.json`, out), JSON.stringify(fixture, null, 1) + "\n");
  console.log(`${name}: ${value}, ${core.count} messages, boundary ${core.boundary}`);
}

type Send = (
  event: Parameters<ReturnType<typeof createActor<typeof threadMachine>>["send"]>[0],
) => void;

const message = (thread: string, i: number) => ({
  type: "message.created" as const,
  message: makeMessage(thread, i, fixtureText(i)),
  seq: i + 1,
});
const answer = (job: SummaryJob) => ({
  type: "summary.built" as const,
  level: job.level,
  index: job.index,
  text: fakeSummary(job),
});

capture("idle", (send, jobs) => {
  for (let i = 0; i < 3; i++) send(message("idle", i));
  while (jobs.length > 0) send(answer(jobs.shift() as SummaryJob));
});
capture("summarizing", (send, _jobs, value) => {
  for (let i = 0; value() !== "slot.open,thread.active.summarizing"; i++)
    send(message("summarizing", i));
});
capture("cutting", (send) => {
  for (let i = 0; i < 14; i++) send(message("cutting", i));
});
capture("merging", (send, jobs, value) => {
  // Every job answered but the newest merge: a batch then waits for a parent being built.
  for (let i = 0; value() !== "slot.open,thread.active.merging" && i < 2000; i++) {
    send(message("merging", i));
    for (;;) {
      const next = jobs.findIndex((j, k) => j.level === 0 || k < jobs.length - 1);
      if (next < 0) break;
      send(answer(jobs.splice(next, 1)[0] as SummaryJob));
    }
  }
});
capture("deleted", (send) => {
  for (let i = 0; i < 6; i++) send(message("deleted", i));
  send({ type: "thread.deleted", at: "2026-01-02T00:00:00.000Z", seq: 7 });
});
