import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { toSnapshot } from "../shared/snapshot.ts";
import { continueRun, restoredActor, type ActorFixture } from "./support/actor-fixture.ts";

const dir = new URL("./fixtures/actor-snapshots/", import.meta.url);
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .map((f) => JSON.parse(readFileSync(new URL(f, dir), "utf8")) as ActorFixture);

describe("actor records saved by earlier versions", () => {
  it("has a fixture of each activity the old machine persisted", () => {
    expect(fixtures.map((f) => f.captured.value).sort()).toEqual(
      ["cutting", "deleted", "idle", "merging", "summarizing"].sort(),
    );
  });

  it.each(fixtures.map((f) => [f.record.thread, f] as const))(
    "%s: restores in place and goes on as the machine that saved it would",
    (_, fixture) => {
      const persisted = restoredActor(fixture);
      const after = continueRun(persisted, fixture.record.thread);
      expect(after.count).toBe(fixture.expected.count);
      expect(after.boundary).toBe(fixture.expected.boundary);
      expect(toSnapshot(after)).toEqual(fixture.expected.snapshot);
    },
  );
});
