import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { run } from "../services/cli/replay/run.ts";
import { namesToEnv } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { publishMessages, publishState, replayWithNodes } from "./support/outline-fixture.ts";
import { quietLogger, type Logger } from "../services/thread-worker/log.ts";
import { startThreadWorker } from "../services/thread-worker/worker.ts";
import type { CoreSettings } from "../shared/settings.ts";
import {
  chatMessage,
  countOn,
  FakeSummarizer,
  harness,
  publishMessage,
  readSnapshot,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";

// Settings follow threads (README, Settings): a worker under other HISTORY_* settings takes
// existing threads over from their next event, records the values in their log, and a replay
// with no HISTORY_* reproduces every thread exactly.
const FIRST: CoreSettings = { line: 256, tail: [300, 600], outline: [1500, 3000], concurrency: 4 };
const THEN: CoreSettings = { line: 200, tail: [120, 240], outline: [700, 1400], concurrency: 4 };

let nc: NatsConnection;
let h: Harness;
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "settings-follow-test" });
  const names = uniqueNames();
  await ensureTopology(nc, names);
  h = await harness(nc, names);
});
afterAll(() => nc.close());

async function underSettings(
  settings: CoreSettings,
  publish: () => Promise<void>,
  threads: string[],
  log: Logger = quietLogger,
) {
  const worker = await startThreadWorker({
    nc,
    names: h.names,
    settings,
    summarizer: new FakeSummarizer(),
    log,
    snapshotDelayMs: 20,
  });
  try {
    await publish();
    await waitSettled(h, threads, 60_000);
  } finally {
    await worker.stop();
  }
}

const publishRange = async (thread: string, from: number, to: number) => {
  for (let i = from; i < to; i++) await publishMessage(h, chatMessage(thread, i));
};

describe("settings that follow threads", () => {
  it("apply to existing threads from their next event, are logged, and replay without HISTORY_*", async () => {
    await underSettings(FIRST, async () => {
      await publishRange("sf-old", 0, 50);
      await publishRange("sf-kept", 0, 30);
    }, ["sf-old", "sf-kept"]);
    expect((await readSnapshot(h, "sf-old"))?.settings).toEqual({
      line: 256,
      tail: [300, 600],
      outline: [1500, 3000],
    });

    await underSettings(THEN, async () => {
      await publishRange("sf-old", 50, 100);
      await publishRange("sf-new", 0, 40);
    }, ["sf-old", "sf-new"]);
    const old = await readSnapshot(h, "sf-old");
    // Followed from its next event: the smaller tail cut it down to at most 120 tokens.
    expect(old?.settings).toEqual({ line: 200, tail: [120, 240], outline: [700, 1400] });
    expect((await readSnapshot(h, "sf-new"))?.settings?.tail).toEqual([120, 240]);
    // A thread with no event since keeps the settings it ran under.
    expect((await readSnapshot(h, "sf-kept"))?.settings?.tail).toEqual([300, 600]);
    // In the log: sf-old at its first message and at the first under the new values.
    const records = await countOn(
      h,
      h.names.historyStream,
      `${h.names.historyPrefix}.sf-old.settings.*`,
    );
    expect(records).toBe(2);

    // A replay that is told nothing of either.
    let text = "";
    const sink = { write: (t: string) => void (text += t) };
    const code = await run(["--all", "--verify"], {
      env: { NATS_URL: inject("natsUrl"), ...namesToEnv(h.names) },
      stdout: sink,
      stderr: sink,
    });
    expect(text).toContain("verify: all 3 threads match");
    expect(code).toBe(0);
  });

  it("a lowered outline[1] that nothing can merge down to is told once, with what to do", async () => {
    // Merges pair two lines of one level (SPEC §4): at one line per level the outline is as small
    // as it gets. Under LOW the cuts of messages 80-129 each leave sf-floor's outline over 520
    // bytes with no pair to merge (the pure core says so for this log: 693 to 1518 bytes, 3 to 7
    // lines); the worker says it once, not at every cut.
    const LOW: CoreSettings = { ...FIRST, outline: [512, 520] };
    await underSettings(FIRST, () => publishRange("sf-floor", 0, 80), ["sf-floor"]);
    const warnings: { message: string; fields?: Record<string, unknown> }[] = [];
    const log: Logger = {
      ...quietLogger,
      warn: (message, fields) => warnings.push({ message, fields }),
    };
    await underSettings(LOW, () => publishRange("sf-floor", 80, 130), ["sf-floor"], log);

    const snapshot = await readSnapshot(h, "sf-floor");
    expect(snapshot?.settings?.outline).toEqual([512, 520]);
    expect(snapshot?.bytes).toBeGreaterThan(520);
    // One line per level, from the coarsest: no two side by side share a level.
    const levels = snapshot?.lines.map((l) => l.level) ?? [];
    expect(levels.every((level, i) => i === 0 || level < (levels[i - 1] as number))).toBe(true);
    const told = warnings.filter((w) => w.message.includes("HISTORY_OUTLINE"));
    expect(told).toHaveLength(1);
    expect(told[0]?.message).toMatch(
      /^thread 'sf-floor': its outline is \d+ bytes, over HISTORY_OUTLINE's 520 \(outline\[1\]\), and none of its \d+ lines can merge .* Set HISTORY_OUTLINE to at least \d+,\d+/,
    );
    expect(told[0]?.fields).toMatchObject({ thread: "sf-floor", outline: [512, 520] });
  });

  it("on a thread whose log records none, names its own settings and never --resummarize", async () => {
    // Stored as a worker from before settings were recorded left it: no settings on HISTORY.
    const names = uniqueNames();
    const { js, kv } = await ensureTopology(nc, names);
    const log = await publishMessages(
      js,
      names,
      Array.from({ length: 60 }, (_, i) => chatMessage("sf-legacy", i)),
    );
    const built = replayWithNodes("sf-legacy", FIRST, log);
    await publishState(js, kv, names, built.state, built.nodes);

    let text = "";
    const sink = { write: (t: string) => void (text += t) };
    const env = { NATS_URL: inject("natsUrl"), ...namesToEnv(names) };
    const code = await run(["--thread", "sf-legacy", "--verify"], {
      env,
      stdout: sink,
      stderr: sink,
    });
    expect(code).toBe(1);
    expect(text).toContain(
      "ran under other settings than this replay's and their log (HISTORY) records none",
    );
    expect(text).toContain(
      "sf-legacy (HISTORY_LINE=256 HISTORY_TAIL=300,600 HISTORY_OUTLINE=1500,3000)",
    );
    expect(text).not.toMatch(/rerun with --resummarize|investigate the worker/);

    // Under its own settings, it verifies.
    text = "";
    const own = {
      ...env,
      HISTORY_LINE: "256",
      HISTORY_TAIL: "300,600",
      HISTORY_OUTLINE: "1500,3000",
    };
    expect(
      await run(["--thread", "sf-legacy", "--verify"], { env: own, stdout: sink, stderr: sink }),
    ).toBe(0);
  });

  it("are recorded through a HISTORY outage: retried in place, the thread never stops", async () => {
    const names = uniqueNames();
    const { jsm } = await ensureTopology(nc, names);
    const own = await harness(nc, names);
    const lines: string[] = [];
    const log: Logger = {
      info: () => {},
      warn: (m) => lines.push(`warn: ${m}`),
      error: (m) => lines.push(`error: ${m}`),
    };
    const worker = await startThreadWorker({
      nc,
      names,
      settings: FIRST,
      summarizer: new FakeSummarizer(),
      log,
      snapshotDelayMs: 20,
    });
    try {
      // No HISTORY: the settings of a new thread's first message cannot be recorded.
      await jsm.streams.delete(names.historyStream);
      await publishMessage(own, chatMessage("sf-outage", 0));
      await waitFor("the settings record to fail", () => lines.some((l) => l.includes("settings")));
      expect(lines[0]).toMatch(/^warn: record the thread's settings on HISTORY .* failed/);
      await ensureTopology(nc, names);
      await publishMessage(own, chatMessage("sf-outage", 1));
      await waitSettled(own, ["sf-outage"]);
      expect((await readSnapshot(own, "sf-outage"))?.count).toBe(2);
      expect(lines.filter((l) => l.startsWith("error:"))).toEqual([]);
      // Recorded once, at the first message (the retry's Msg-Id de-duplicates a lost answer).
      expect(
        await countOn(own, names.historyStream, `${names.historyPrefix}.sf-outage.settings.*`),
      ).toBe(1);
    } finally {
      await worker.stop();
    }
  });
});
