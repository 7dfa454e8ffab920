import { Kvm } from "@nats-io/kv";
import { describe, expect, inject, it } from "vitest";
import { run } from "../services/cli/replay/run.ts";
import { NAME_VARIABLES } from "../services/config/names.ts";
import { METRIC } from "../services/thread-worker/metrics.ts";
import type { CoreSettings } from "../shared/settings.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import {
  chatMessage,
  newestEventSeq,
  publishMessage,
  publishRaw,
  readSnapshot,
  SMALL,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

const scope = workerScope();
const settings: CoreSettings = { ...SMALL, group: 16 };

/** The replay's environment for the harness's names and the worker's settings. */
function replayEnv(h: Harness): Record<string, string> {
  const env: Record<string, string> = {
    NATS_URL: inject("natsUrl"),
    HISTORY_LINE: String(settings.line),
    HISTORY_TAIL: settings.tail.join(","),
    HISTORY_OUTLINE: settings.outline.join(","),
    HISTORY_CONCURRENCY: String(settings.concurrency),
    HISTORY_GROUP: String(settings.group),
  };
  for (const [key, variable] of Object.entries(NAME_VARIABLES))
    env[variable] = h.names[key as keyof typeof NAME_VARIABLES];
  return env;
}

async function replay(h: Harness, argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(argv, {
    env: replayEnv(h),
    stdout: { write: (t: string) => void (stdout += t) },
    stderr: { write: (t: string) => void (stderr += t) },
  });
  return { code, stdout, stderr };
}

describe("a message id published again after it left the tail", () => {
  it("is applied once by the worker, by replay --verify and by replay --into", async () => {
    const { h } = await scope.setup("replay-ids-test");
    const worker = await scope.start(h, { settings });
    const thread = "again";
    for (let i = 0; i < 70; i++) await publishMessage(h, chatMessage(thread, i));
    await waitSettled(h, [thread]);
    expect((await readSnapshot(h, thread))?.boundary).toBeGreaterThan(5);
    // Message 5 again, past the stream's duplicate window: another Nats-Msg-Id, the same id.
    await publishMessage(h, chatMessage(thread, 5), { msgID: "republished-5" });
    for (let i = 70; i < 140; i++) await publishMessage(h, chatMessage(thread, i));
    await waitSettled(h, [thread]);

    const live = (await readSnapshot(h, thread)) as OutlineSnapshot;
    expect(live.count).toBe(140);
    expect(worker.metrics.get(METRIC.duplicates, { why: "id" })).toBe(1);

    const verified = await replay(h, ["--thread", thread, "--verify"]);
    expect(verified.stderr).not.toMatch(/replay: (?!\d)/);
    expect(verified.stdout).not.toContain("differs");
    expect(verified.code).toBe(0);

    const into = `${h.names.kvBucket}-rebuilt`;
    const rebuilt = await replay(h, ["--thread", thread, "--into", into]);
    expect(rebuilt.code).toBe(0);
    const bucket = await new Kvm(h.js).open(into);
    expect((await bucket.get(thread))?.json<OutlineSnapshot>()).toEqual(live);
  });

  it("a thread ending with events the worker passes over: the snapshot's seq shows them, and replay reproduces it", async () => {
    const { h } = await scope.setup("replay-passed-test");
    const worker = await scope.start(h, { settings });
    const thread = "passed";
    for (let i = 0; i < 70; i++) await publishMessage(h, chatMessage(thread, i));
    await waitSettled(h, [thread]);
    const applied = (await readSnapshot(h, thread)) as OutlineSnapshot;
    // After the last message: its id again past the window, then a body that does not decode.
    await publishMessage(h, chatMessage(thread, 5), { msgID: "republished-5" });
    const last = await publishRaw(h, h.s.messageCreated(thread), new TextEncoder().encode("{"));
    expect(await newestEventSeq(h, thread)).toBe(last);
    await waitSettled(h, [thread]);

    const live = (await readSnapshot(h, thread)) as OutlineSnapshot;
    expect(live.seq).toBe(last);
    expect({ ...live, seq: applied.seq }).toEqual(applied);
    expect(worker.metrics.get(METRIC.duplicates, { why: "id" })).toBe(1);

    for (const only of [["--thread", thread], ["--all"]]) {
      const verified = await replay(h, [...only, "--verify"]);
      expect(verified.stdout).not.toContain("differ");
      expect(verified.code).toBe(0);
    }
    const into = `${h.names.kvBucket}-rebuilt`;
    expect((await replay(h, ["--thread", thread, "--into", into])).code).toBe(0);
    const bucket = await new Kvm(h.js).open(into);
    expect((await bucket.get(thread))?.json<OutlineSnapshot>()).toEqual(live);
  });
});
