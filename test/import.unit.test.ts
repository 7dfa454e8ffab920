import fc from "fast-check";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import type { AppliedIds } from "../services/cli/applied-ids.ts";
import { importLines, summarize } from "../services/cli/import.ts";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import type { PipelinedPublisher, Stored } from "../services/nats/pipelined-publish.ts";
import { chatMessage } from "./support/thread-worker.ts";

/** A line of the generated file: a message (thread index, message index), bad JSON or blank. */
type Line = { kind: "message"; thread: number; i: number } | { kind: "bad" } | { kind: "blank" };

const THREADS = ["u-a", "u-b", "u-c", "u-d"];

const lineArb: fc.Arbitrary<Line> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("message" as const),
      thread: fc.nat(THREADS.length - 1),
      i: fc.nat(30),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "bad" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "blank" as const }) },
);

const text = (line: Line): string =>
  line.kind === "message"
    ? JSON.stringify(chatMessage(THREADS[line.thread] ?? "", line.i))
    : line.kind === "bad"
      ? "{oops"
      : "  ";

/** Answers after a few turns of the event loop (0-2 timers), as a server would. */
const later = <T>(value: () => T, turns: number): Promise<T> =>
  new Promise((resolve, reject) => {
    const go = () => {
      try {
        resolve(value());
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    };
    if (turns === 0) queueMicrotask(go);
    else setTimeout(go, turns - 1);
  });

/** A stream that stores each message id once (an endless duplicate window), acks late. */
function fakeStream(delays: number[]) {
  const stored: string[] = [];
  const seen = new Set<string>();
  let inFlight = 0;
  let maxInFlight = 0;
  let n = 0;
  const publisher: PipelinedPublisher = {
    publish(_subject, _data, msgId) {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const duplicate = seen.has(msgId);
      if (!duplicate) stored.push(msgId);
      seen.add(msgId);
      return later<Stored>(
        () => {
          inFlight -= 1;
          return { stream: "CHAT", seq: stored.length, duplicate };
        },
        delays[n++ % delays.length] ?? 0,
      );
    },
    close: () => undefined,
  };
  return { publisher, stored, maxInFlight: () => maxInFlight };
}

/** The worker's id index holding `ids` (message ids), failing from its `failAt`th answer on. */
function fakeIndex(ids: Set<string>, delays: number[], failAt?: number) {
  let answers = 0;
  let failures = 0;
  const answer = <T>(value: () => T): Promise<T> =>
    later(
      () => {
        answers += 1;
        if (failAt !== undefined && answers >= failAt) {
          failures += 1;
          throw new Error("index unreadable");
        }
        return value();
      },
      delays[answers % delays.length] ?? 0,
    );
  const index: AppliedIds = {
    has: (_thread, id) => answer(() => ids.has(id)),
    hasSnapshot: () => Promise.resolve(ids.size > 0),
    close: () => undefined,
  };
  return { index, failures: () => failures };
}

function chunks(all: string, size: number): AsyncIterable<string> {
  return (async function* () {
    for (let i = 0; i < all.length; i += size) yield await Promise.resolve(all.slice(i, i + size));
  })();
}

const nc = {} as NatsConnection;

describe("importLines with the worker's id index", () => {
  it("publishes every valid line the index does not hold, in file order, at most a window at once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(lineArb, { maxLength: 120 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 120 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 400 }),
        fc.array(fc.nat(2), { minLength: 1, maxLength: 7 }),
        fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
        async (lines, held, window, chunkSize, delays, failAt) => {
          const ids = new Set(
            lines.flatMap((line, k) =>
              line.kind === "message" && held[k % held.length]
                ? [`${THREADS[line.thread] ?? ""}-m${line.i}`]
                : [],
            ),
          );
          const stream = fakeStream(delays);
          const { index, failures } = fakeIndex(ids, delays, failAt);
          const unchecked: string[] = [];
          const result = await importLines({
            nc,
            names: DEFAULT_NAMES,
            input: chunks(lines.map(text).join("\n"), chunkSize),
            window,
            applied: index,
            publisher: stream.publisher,
            onUnchecked: (reason) => unchecked.push(reason),
          });
          const valid = lines.flatMap((line) =>
            line.kind === "message" ? [`${THREADS[line.thread] ?? ""}-m${line.i}`] : [],
          );
          // Nothing is lost: each valid line is stored, or already was, or the worker has it.
          expect(result.published + result.duplicates + result.applied).toBe(valid.length);
          expect(result.lines).toBe(lines.length);
          expect(result.blank + result.bad.length).toBe(lines.length - valid.length);
          expect(result.bad.length).toBe(lines.filter((l) => l.kind === "bad").length);
          expect(summarize(result, "f").includes(`, ${result.applied} already applied,`)).toBe(
            result.applied > 0,
          );
          // A failing index is told once, and only then.
          expect(unchecked).toEqual(failures() > 0 ? ["index unreadable"] : []);
          // Only ids the index holds are left out.
          const left = valid.filter((id) => !stream.stored.includes(id));
          for (const id of left) expect(ids.has(id)).toBe(true);
          // In file order: the stored ids are the valid lines' in order, some left out.
          let next = 0;
          for (const id of stream.stored) {
            next = valid.indexOf(id, next) + 1;
            expect(next).toBeGreaterThan(0);
          }
          expect(stream.maxInFlight()).toBeLessThanOrEqual(window);
          // An index that answers throughout leaves out exactly what it holds.
          if (failAt === undefined) {
            const fresh = valid.filter((id) => !ids.has(id));
            expect(stream.stored).toEqual([...new Set(fresh)]);
            expect(result.applied).toBe(valid.length - fresh.length);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

/** Bytes in chunks of `size`, as a file stream without an encoding delivers them. */
function byteChunks(all: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  return (async function* () {
    for (let i = 0; i < all.length; i += size)
      yield await Promise.resolve(Buffer.from(all.subarray(i, i + size)));
  })();
}

describe("importLines on bytes", () => {
  it("reports a line that is not UTF-8 as bad and publishes the others, byte for byte", async () => {
    const good = [0, 1, 2].map((i) => ({ ...chatMessage("u-utf8", i), text: `café ☕ ${i}` }));
    const json = good.map((m) => JSON.stringify(m));
    const [before, after] = (json[1] ?? "").split("café");
    const broken = Buffer.concat([
      Buffer.from(before ?? ""),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`café${after ?? ""}`),
    ]);
    const file = Buffer.concat([
      Buffer.from(`${json[0]}\r\n`),
      broken,
      Buffer.from(`\n${json[2]}\n${json[1]}`),
    ]);
    // Any chunk size: a character cut between chunks is whole again in its line.
    for (const size of [1, 3, 7, 64, file.length]) {
      const stream = fakeStream([0]);
      const bodies: string[] = [];
      const publisher: PipelinedPublisher = {
        publish(subject, data, msgId) {
          bodies.push(new TextDecoder().decode(data));
          return stream.publisher.publish(subject, data, msgId);
        },
        close: () => undefined,
      };
      const bad: number[] = [];
      const result = await importLines({
        nc,
        names: DEFAULT_NAMES,
        input: byteChunks(file, size),
        publisher,
        onBad: (line) => bad.push(line),
      });
      expect(bad).toEqual([2]);
      expect(result.bad.map((b) => b.line)).toEqual([2]);
      // Where in the line, as the worker names it in a body's dead letter.
      expect(result.bad[0]?.reason).toMatch(
        new RegExp(`^not valid UTF-8 at byte ${Buffer.byteLength(before ?? "")} \\(0xFF\\): `),
      );
      expect(result).toMatchObject({ lines: 4, published: 3 });
      expect(bodies).toEqual([json[0], json[2], json[1]]);
      expect(bodies.some((b) => b.includes("\uFFFD"))).toBe(false);
    }
  });
});

describe("importLines with a message id twice in the file", () => {
  it("warns of a repeat with other content, naming both lines; an identical one is quiet", async () => {
    const m = (i: number, text: string) => JSON.stringify({ ...chatMessage("u-rep", i), text });
    const file = [
      m(0, "first"),
      m(1, "one"),
      m(0, "first"), // line 3: byte for byte line 1's
      m(0, "changed"), // line 4: other content than line 1
      JSON.stringify({ ...chatMessage("u-other", 0), text: "changed" }), // another thread
      m(1, "one, edited"), // line 6
    ].join("\n");
    const stream = fakeStream([0, 1]);
    const repeats: [number, number, string, string][] = [];
    const result = await importLines({
      nc,
      names: DEFAULT_NAMES,
      input: chunks(file, 5),
      window: 2,
      publisher: stream.publisher,
      onRepeat: (line, first, thread, id) => repeats.push([line, first, thread, id]),
    });
    expect(repeats).toEqual([
      [4, 1, "u-rep", "u-rep-m0"],
      [6, 2, "u-rep", "u-rep-m1"],
    ]);
    // Counted as before: the stream keeps the first of each id.
    expect(result).toMatchObject({ lines: 6, published: 3, duplicates: 3 });
    expect(result.bad).toEqual([]);
  });
});

describe("importLines with the worker's tombstones", () => {
  it("asks for a tombstone only of threads without a snapshot, and refuses a deleted one's lines", async () => {
    // u-live has a snapshot (its actor record may be large: never read); u-new has none and is
    // not deleted; u-gone has none and is deleted.
    const lines = ["u-live", "u-new", "u-gone", "u-live", "u-gone", "u-new"].map((thread, i) =>
      JSON.stringify(chatMessage(thread, i)),
    );
    const stream = fakeStream([0, 1, 2, 3, 4, 5]);
    const asked: string[] = [];
    const result = await importLines({
      nc,
      names: DEFAULT_NAMES,
      input: chunks(lines.join("\n"), 17),
      window: 4,
      publisher: stream.publisher,
      applied: {
        has: () => Promise.resolve(false),
        hasSnapshot: (thread) => Promise.resolve(thread === "u-live"),
        close: () => undefined,
      },
      deleted: {
        isDeleted: (thread) => {
          asked.push(thread);
          return Promise.resolve(thread === "u-gone");
        },
        close: () => undefined,
      },
    });
    expect(new Set(asked)).toEqual(new Set(["u-new", "u-gone"]));
    expect(result.bad.map((b) => [b.line, b.reason])).toEqual([
      [3, "thread 'u-gone' was deleted; its id takes no new messages (use a new thread id)"],
      [5, "thread 'u-gone' was deleted; its id takes no new messages (use a new thread id)"],
    ]);
    expect(result).toMatchObject({ lines: 6, published: 4 });
  });
});

describe("importLines' progress", () => {
  it("counts a stream of unknown length without a total, and a file's lines against theirs", async () => {
    const file = [0, 1, 2, 3].map((i) => JSON.stringify(chatMessage("u-prog", i))).join("\n");
    // A clock that moves a second a reading: every tick may write a line.
    const progressOf = async (expected?: number) => {
      let t = 0;
      const written: string[] = [];
      await importLines({
        nc,
        names: DEFAULT_NAMES,
        input: chunks(file, 40),
        ...(expected !== undefined ? { expected } : {}),
        publisher: fakeStream([0]).publisher,
        progress: { write: (text) => written.push(text) },
        now: () => (t += 1_000),
      });
      return written;
    };
    // stdin: no total is known, so none is shown (it was `1/1 … (100%)`, then `4/4`).
    const piped = await progressOf();
    expect(piped.length).toBeGreaterThan(0);
    for (const line of piped) expect(line).toMatch(/^import: \d+ messages? {2}\d+ msg\/s\n$/);
    expect(piped.at(-1)).toMatch(/^import: 4 messages /);
    // A file: its lines were counted first.
    const counted = await progressOf(4);
    expect(counted.at(-1)).toMatch(/^import: 4\/4 messages .* \(100%\)\n$/);
    expect(counted.some((line) => /^import: [1-3]\/4 messages/.test(line))).toBe(true);
  });
});
