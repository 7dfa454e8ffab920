import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { KvEntry } from "@nats-io/kv";
import type { KvWrites } from "../services/nats/kv-writer.ts";
import { workerMetrics } from "../services/thread-worker/metrics.ts";
import { PENDING_ONLY_MS, SnapshotSchedule } from "../services/thread-worker/snapshot-schedule.ts";
import { SlotTools } from "../services/thread-worker/slot-tools.ts";
import type { WorkerContext } from "../services/thread-worker/worker-context.ts";
import { jobFor } from "../shared/job-view.ts";
import { encodeSnapshot, toSnapshot, type OutlineSnapshot } from "../shared/snapshot.ts";
import {
  appendMessage,
  initialThreadState,
  isAtRest,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import { fakeSummary, makeMessage, settingsArb, textArb } from "./support/conversation.ts";

const runs = Number(process.env.PROPERTY_RUNS ?? 40);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Characters JSON escapes or UTF-8 encodes in more than one byte, a lone surrogate among them. */
const trickyArb = fc
  .array(fc.constantFrom('"', "\\", "\n", "\u0000", "\u2028", "\ud800", "é", "中", "😀", "a"), {
    minLength: 1,
    maxLength: 40,
  })
  .map((cs) => cs.join(""));

describe("encodeSnapshot", () => {
  it("is JSON.stringify(toSnapshot(state)) as UTF-8, byte for byte, at every step", () => {
    fc.assert(
      fc.property(
        settingsArb,
        fc.array(fc.oneof(textArb, trickyArb), { minLength: 1, maxLength: 120 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 32 }),
        trickyArb,
        (settings, texts, choices, idPart) => {
          let s = initialThreadState("enc", settings);
          let step = 0;
          for (const [i, text] of texts.entries()) {
            const message = makeMessage("enc", i, text, { id: `${idPart}-${i}` });
            s = takeJobs(appendMessage(s, message, i + 1).state).state;
            // Some summaries answered, some left in flight: lines kept across steps and new ones.
            const answers = (choices[step++ % choices.length] ?? 0) % 4;
            for (let k = 0; k < answers && s.inflight.length > 0; k++) {
              const ref = s.inflight[0];
              if (ref) s = takeJobs(summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state).state;
            }
            expect(encodeSnapshot(s)).toEqual(encoder.encode(JSON.stringify(toSnapshot(s))));
            // Events passed over after the last message: shown as the snapshot's seq.
            const passed = s.seq + (choices[i % choices.length] ?? 0);
            expect(encodeSnapshot(s, passed)).toEqual(
              encoder.encode(JSON.stringify(toSnapshot(s, passed))),
            );
            expect(toSnapshot(s, passed).seq).toBe(passed);
          }
        },
      ),
      { numRuns: runs },
    );
  });
});

/** The snapshot bucket in memory: what is stored, and every write. */
function fakeSnapshots() {
  const writes: OutlineSnapshot[] = [];
  let revision = 0;
  let value: Uint8Array | undefined;
  const stored = (bytes: Uint8Array) => {
    value = bytes;
    writes.push(JSON.parse(decoder.decode(bytes)) as OutlineSnapshot);
    return Promise.resolve(++revision);
  };
  const kv: KvWrites = {
    create: (_key, bytes) => stored(bytes),
    update: (_key, bytes) => stored(bytes),
    put: (_key, bytes) => stored(bytes),
    get: () =>
      Promise.resolve(value ? ({ value, revision, operation: "PUT" } as unknown as KvEntry) : null),
  };
  return { kv, writes };
}

function scheduleWith(snapshots: KvWrites, cursor = { seen: 0 }) {
  const ctx = {
    kv: { snapshots },
    snapshotDelayMs: 50,
    metrics: workerMetrics(),
    log: { info: () => {}, warn: () => {}, error: () => {} },
    names: { kvBucket: "outline" },
  } as unknown as WorkerContext;
  let due = 0;
  const schedule = new SnapshotSchedule(
    new SlotTools(ctx, "t"),
    () => {
      due += 1;
      schedule.isDue = true;
    },
    cursor,
  );
  return { schedule, due: () => due };
}

/** A thread with summaries in flight: messages past the tail, their leaves asked for. */
function busyThread(): ThreadState {
  let s = initialThreadState("t", {
    line: 512,
    tail: [200, 400],
    outline: [2000, 4000],
    concurrency: 8,
  });
  for (let i = 0; i < 8; i++)
    s = appendMessage(s, makeMessage("t", i, "x".repeat(700)), i + 1).state;
  s = takeJobs(s).state;
  expect(s.inflight.length).toBeGreaterThan(2);
  return s;
}

/** The newest leaf in flight built: a cut needs the oldest ones first, so nothing else moves. */
function buildNewest(s: ThreadState): ThreadState {
  const ref = s.inflight[s.inflight.length - 1];
  if (!ref) throw new Error("nothing in flight");
  return summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
}

function buildAll(s: ThreadState): ThreadState {
  while (s.inflight.length > 0 || s.wanted.length > 0) {
    s = takeJobs(s, undefined, false).state;
    const ref = s.inflight[0];
    if (ref) s = summaryBuilt(s, ref, fakeSummary(jobFor(s, ref))).state;
  }
  return s;
}

describe("SnapshotSchedule: pending counts alone", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a busy thread's change of pending counts alone waits PENDING_ONLY_MS, then is written", async () => {
    const { kv, writes } = fakeSnapshots();
    const { schedule, due } = scheduleWith(kv);
    const first = busyThread();
    await schedule.write(first);
    expect(writes).toHaveLength(1);

    const second = buildNewest(first);
    expect([second.seq, second.boundary]).toEqual([first.seq, first.boundary]);
    expect(toSnapshot(second).pending).not.toEqual(toSnapshot(first).pending);
    await schedule.write(second);
    expect(writes).toHaveLength(1);
    // Put off, not dropped: still wanted, and due once the time is up.
    expect(schedule.wanted).toBe(true);
    vi.advanceTimersByTime(PENDING_ONLY_MS - 1);
    expect(due()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(due()).toBe(1);
    await schedule.write(second);
    expect(writes).toHaveLength(2);
    expect(writes[1]).toEqual(toSnapshot(second));
  });

  it("a thread coming to rest, a new message or a whole write goes out at once", async () => {
    const { kv, writes } = fakeSnapshots();
    const { schedule } = scheduleWith(kv);
    const first = busyThread();
    await schedule.write(first);

    // Whole (the slot's last writes): written whatever changed.
    const second = buildNewest(first);
    await schedule.write(second, true);
    expect(writes).toHaveLength(2);

    // A new message: its seq is new.
    const third = appendMessage(buildNewest(second), makeMessage("t", 8, "y".repeat(700)), 9).state;
    expect(isAtRest(third)).toBe(false);
    await schedule.write(third);
    expect(writes).toHaveLength(3);

    // At rest: written at once, and what it shows is the state's.
    const rest = buildAll(third);
    expect(isAtRest(rest)).toBe(true);
    await schedule.write(rest);
    expect(writes).toHaveLength(4);
    expect(writes[3]).toEqual(toSnapshot(rest));
    expect(writes[3]?.pending).toMatchObject({ jobs: 0, cuts: 0, merging: false });
  });

  it("an event passed over after the last message (seen past the state's seq) goes out at once, as the seq shown", async () => {
    const { kv, writes } = fakeSnapshots();
    const cursor = { seen: 0 };
    const { schedule } = scheduleWith(kv, cursor);
    const first = busyThread();
    cursor.seen = first.seq;
    await schedule.write(first);
    expect(writes[0]?.seq).toBe(first.seq);

    // A dead letter or a duplicate id: the state is the same, the stream moved on.
    cursor.seen = first.seq + 2;
    await schedule.write(first);
    expect(writes).toHaveLength(2);
    expect(writes[1]).toEqual(toSnapshot(first, first.seq + 2));
    expect(writes[1]?.seq).toBe(first.seq + 2);
  });

  it("after a write showing the thread at rest, any change goes out", async () => {
    const { kv, writes } = fakeSnapshots();
    const { schedule } = scheduleWith(kv);
    const rest = buildAll(busyThread());
    await schedule.write(rest);
    // Held nodes only change: still at rest, still written.
    await schedule.write({ ...rest });
    expect(writes).toHaveLength(2);
  });
});
