import { jetstreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { threadLister } from "../services/explorer/thread-list.ts";
import type { ThreadPage } from "../services/explorer/types.ts";
import { createReader } from "../services/nats/reader.ts";
import { uniqueNames } from "./support/thread-worker.ts";

// The explorer's thread list against a real bucket: most recently written first, every live
// thread exactly once across pages, deleted ones never, the filter on the thread id. Windows are
// made tiny so the scan widens and continues across many of them.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);
const POOL = [
  "alpha",
  "beta",
  "Gamma-7",
  "delta_2",
  "eps",
  "zeta",
  "eta",
  "theta",
  "iota",
  "kappa",
];

let nc: NatsConnection;
let names: InfraNames;
let kv: KV;

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "explorer-list" });
  names = uniqueNames();
  kv = (await ensureTopology(nc, names)).kv;
});
afterAll(async () => nc?.close());

type Op = { kind: "put" | "delete" | "purge" | "erase"; thread: string };

const snapshotOf = (thread: string, count: number) =>
  JSON.stringify({
    thread,
    count,
    boundary: Math.floor(count / 2),
    since: null,
    cutAt: null,
    complete: true,
    bytes: count * 10,
    seq: count,
    lines: Array.from({ length: count % 5 }, () => ({})),
    tail: [],
    tailSeqs: [],
    pending: { jobs: 0, cuts: 0, merging: false },
  });

/** Applies the writes; returns the threads that should be listed, most recent write first. */
async function apply(ops: Op[]): Promise<{ order: string[]; counts: Map<string, number> }> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.purge(`KV_${names.kvBucket}`);
  const last = new Map<string, number>();
  const counts = new Map<string, number>();
  for (const [i, op] of ops.entries()) {
    if (op.kind === "put") {
      await kv.put(op.thread, snapshotOf(op.thread, i + 1));
      last.set(op.thread, i);
      counts.set(op.thread, i + 1);
    } else if (op.kind === "delete") {
      await kv.delete(op.thread);
      last.delete(op.thread);
    } else if (op.kind === "purge") {
      await kv.purge(op.thread);
      last.delete(op.thread);
    } else {
      // What the worker does on thread.deleted: the key's messages removed, no marker left.
      const entry = await kv.get(op.thread);
      if (entry && entry.operation === "PUT") {
        await jsm.streams.deleteMessage(`KV_${names.kvBucket}`, entry.revision, false);
      }
      last.delete(op.thread);
    }
  }
  const order = [...last.entries()].sort((a, b) => b[1] - a[1]).map(([t]) => t);
  return { order, counts };
}

async function listAll(
  filter: string,
  limit: number,
  minWindow: number,
): Promise<{ threads: string[]; pages: ThreadPage[] }> {
  const lister = threadLister(nc, names, createReader(nc, names), { minWindow, maxScan: 1_000 });
  const pages: ThreadPage[] = [];
  let before: number | undefined;
  for (let guard = 0; guard < 200; guard++) {
    const page = await lister.list({ filter, before, limit });
    pages.push(page);
    if (page.next === null) break;
    before = page.next;
  }
  return { threads: pages.flatMap((p) => p.threads.map((t) => t.thread)), pages };
}

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom("put", "put", "put", "put", "delete", "purge", "erase"),
  thread: fc.constantFrom(...POOL),
});

describe("the explorer's thread list", () => {
  it("pages through every live thread once, most recently written first", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 0, maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 8 }),
        async (ops, limit, minWindow) => {
          const written = Date.now();
          const { order, counts } = await apply(ops);
          const { threads, pages } = await listAll("", limit, minWindow);
          expect(threads).toEqual(order);
          for (const page of pages) expect(page.threads.length).toBeLessThanOrEqual(limit);
          // Each row carries its snapshot's figures.
          for (const row of pages.flatMap((p) => p.threads)) {
            expect(row.count).toBe(counts.get(row.thread));
            // When the snapshot was written, as the stream stored it.
            expect(Date.parse(row.updated)).toBeGreaterThanOrEqual(written - 1_000);
            expect(Date.parse(row.updated)).toBeLessThanOrEqual(Date.now() + 1_000);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("keeps the threads whose id contains the filter, in any case", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 30 }),
        fc.constantFrom("a", "ET", "-7", "_", "zz", "kappa"),
        fc.integer({ min: 1, max: 4 }),
        async (ops, filter, limit) => {
          const { order } = await apply(ops);
          const { threads } = await listAll(filter, limit, 1);
          expect(threads).toEqual(
            order.filter((t) => t.toLowerCase().includes(filter.toLowerCase())),
          );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("says when a rare filter stopped at its scan limit, and goes on from there", async () => {
    const { order } = await apply([
      { kind: "put", thread: "kappa" },
      ...Array.from({ length: 30 }, (_, i) => ({
        kind: "put" as const,
        thread: POOL[i % 8] as string,
      })),
    ]);
    expect(order).toContain("kappa");
    const lister = threadLister(nc, names, createReader(nc, names), { minWindow: 2, maxScan: 3 });
    const first = await lister.list({ filter: "kappa", before: undefined, limit: 5 });
    expect(first.threads).toEqual([]);
    expect(first.partial).toBe(true);
    expect(first.next).not.toBeNull();
    let before = first.next ?? undefined;
    const found: string[] = [];
    for (let i = 0; i < 50 && before !== undefined; i++) {
      const page = await lister.list({ filter: "kappa", before, limit: 5 });
      found.push(...page.threads.map((t) => t.thread));
      before = page.next ?? undefined;
    }
    expect(found).toEqual(["kappa"]);
  });
});
