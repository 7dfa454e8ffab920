import { readdirSync, readFileSync } from "node:fs";
import { createActor, type Snapshot } from "xstate";
import { describe, expect, it } from "vitest";
import { stateName } from "../machines/state-name.ts";
import { migrateSnapshot, SNAPSHOT_VERSION, threadMachine } from "../machines/thread.ts";
import { threadSettingsOf } from "../shared/settings.ts";
import { toSnapshot } from "../shared/snapshot.ts";
import {
  continueRun,
  fixtureSettings,
  restoredActor,
  type ActorFixture,
} from "./support/actor-fixture.ts";

const dir = new URL("./fixtures/actor-snapshots/", import.meta.url);
/** Every version's fixtures, as `v<N>/<name>.json`. */
const fixtures = readdirSync(dir).flatMap((version) =>
  readdirSync(new URL(`${version}/`, dir))
    .filter((f) => f.endsWith(".json"))
    .map((f) => ({
      version,
      fixture: JSON.parse(readFileSync(new URL(`${version}/${f}`, dir), "utf8")) as ActorFixture,
    })),
);
const v1 = fixtures.filter((f) => f.version === "v1").map((f) => f.fixture);

/** The state this machine shows for a version-1 state value (flat, before the chart). */
const chartStateOf = (v1Value: string) =>
  `slot.open,thread.${v1Value === "deleted" ? "deleted" : `active.${v1Value}`}`;

describe("actor records saved by earlier versions", () => {
  it("has a fixture of each activity the version-1 machine persisted", () => {
    expect(v1.map((f) => f.captured.value).sort()).toEqual(
      ["cutting", "deleted", "idle", "merging", "summarizing"].sort(),
    );
  });

  it.each(fixtures.map((f) => [`${f.version} ${f.fixture.record.thread}`, f.fixture] as const))(
    "%s: restores in place and goes on as the machine that saved it would",
    (_, fixture) => {
      const persisted = restoredActor(fixture);
      for (const via of ["snapshot", "loaded"] as const) {
        const after = continueRun(persisted, fixture.record.thread, via);
        expect(after.count).toBe(fixture.expected.count);
        expect(after.boundary).toBe(fixture.expected.boundary);
        // v1 and v2 were captured before snapshots showed the thread's settings: those are the
        // core's own.
        const { settings, ...snapshot } = toSnapshot(after);
        const { settings: captured, ...expected } = fixture.expected.snapshot;
        expect(snapshot).toEqual(expected);
        expect(settings).toEqual(captured ?? threadSettingsOf(after.settings));
      }
    },
  );

  it.each(v1.map((f) => [f.record.thread, f] as const))(
    "v1 %s: the restored actor shows the chart's state, the node it waits for, the version",
    (_, fixture) => {
      const migrated = migrateSnapshot(restoredActor(fixture));
      const actor = createActor(threadMachine, {
        input: { thread: fixture.record.thread, settings: fixtureSettings },
        snapshot: migrated as unknown as Snapshot<unknown>,
      }).start();
      const snapshot = actor.getSnapshot();
      expect(stateName(snapshot.value)).toBe(chartStateOf(fixture.captured.value));
      expect(snapshot.context.version).toBe(SNAPSHOT_VERSION);
      const waits = ["cutting", "merging"].includes(fixture.captured.value);
      expect(snapshot.context.waitingFor === null).toBe(!waits);
      expect(actor.getPersistedSnapshot()).toMatchObject({
        context: { version: SNAPSHOT_VERSION },
      });
    },
  );
});
