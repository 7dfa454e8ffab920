import { describe, expect, it } from "vitest";
import type { SummaryEvent } from "../shared/history.ts";
import { joinedText } from "../shared/render.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { ApiError } from "../services/api/api-error.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import type { ThreadReader } from "../services/nats/reader.ts";

// Zoom reads a line's halves from HISTORY; a free parent is not there and is joined from its own
// children (services/prompt-builder/operations.ts, nodeOf). These run against HISTORY in memory.

const LEVEL = 12;
const N = 2 ** LEVEL;

/** One outline line over messages [0, N), nothing else; HISTORY holds `nodes`. */
function reader(nodes: Map<string, SummaryEvent>): ThreadReader & { reads: number } {
  const snapshot: OutlineSnapshot = {
    thread: "t",
    count: N,
    boundary: N,
    since: null,
    cutAt: "2026-01-01T00:00:00.000Z",
    complete: true,
    bytes: 10,
    seq: N,
    lines: [
      { id: 0, n: N, level: LEVEL, text: "line", bytes: 4, until: "2026-01-01T00:00:00.000Z" },
    ],
    tail: [],
    tailSeqs: [],
    pending: { jobs: 0, cuts: 0, merging: false },
  };
  const fake = {
    reads: 0,
    snapshot: () => Promise.resolve(snapshot),
    storedSnapshot: () => Promise.resolve(undefined),
    lastMessageSeq: () => Promise.resolve(N),
    messageAt: () => Promise.resolve(undefined),
    messagesAfter: () => Promise.resolve([]),
    node: (_thread: string, level: number, index: number) => {
      fake.reads++;
      return Promise.resolve(nodes.get(`${level}:${index}`));
    },
  };
  return fake;
}

const leaf = (index: number): SummaryEvent => ({
  thread: "t",
  level: 0,
  index,
  text: `m${index}`,
  until: `2026-01-01T00:00:${String(index % 60).padStart(2, "0")}.000Z`,
  by: "free",
});

describe("zoom into free parents", () => {
  it("joins a parent missing from HISTORY from its children, down to the leaves", async () => {
    // Under line 0+N: model nodes at level 3 and up, free parents below them, leaves published.
    const nodes = new Map<string, SummaryEvent>();
    for (let i = 0; i < N; i++) nodes.set(`0:${i}`, leaf(i));
    for (let level = 3; level < LEVEL; level++) {
      for (let i = 0; i < N >> level; i++) {
        nodes.set(`${level}:${i}`, { ...leaf(i), level, text: `model ${level}:${i}`, by: "m" });
      }
    }
    const r = reader(nodes);
    const zoom = (id: number, n: number) => createOperations(r).zoom({ thread: "t", id, n });
    // The two halves of node 3:5 are free parents at level 2, each the join of two free
    // parents at level 1, each the join of two leaves.
    const joined = (first: number) =>
      joinedText(
        joinedText(`m${first}`, `m${first + 1}`),
        joinedText(`m${first + 2}`, `m${first + 3}`),
      );
    expect(await zoom(40, 8)).toEqual({
      lines: [
        { id: 40, n: 4, text: joined(40), until: leaf(43).until },
        { id: 44, n: 4, text: joined(44), until: leaf(47).until },
      ],
    });
    // A model-built node is read as stored.
    expect(await zoom(0, 32)).toEqual({
      lines: [
        { id: 0, n: 16, text: "model 4:0", until: leaf(0).until },
        { id: 16, n: 16, text: "model 4:1", until: leaf(1).until },
      ],
    });
  });

  it("answers a line whose nodes are gone with STATE_MISSING, in two reads a level", async () => {
    const r = reader(new Map());
    const answer = await createOperations(r)
      .zoom({ thread: "t", id: 0, n: N })
      .catch((err: unknown) => err);
    expect(answer).toBeInstanceOf(ApiError);
    expect((answer as ApiError).code).toBe("STATE_MISSING");
    // Each of the two halves is read, then joined down its left side alone: not 2^LEVEL reads.
    expect(r.reads).toBeLessThanOrEqual(4 * LEVEL);
  });
});
