import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { InfraNames } from "../services/config/names.ts";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openAppliedIds } from "../services/cli/applied-ids.ts";
import { deletedThreadReason, openDeletedThreads } from "../services/cli/deleted-threads.ts";
import { importLines, summarize } from "../services/cli/import.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology, subjects } from "../services/nats/topology.ts";
import {
  chatMessage,
  harness,
  readSnapshot,
  uniqueNames,
  waitFor,
} from "./support/thread-worker.ts";
import { startSmallWorker } from "./support/worker-scope.ts";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "import-test" });
});
afterAll(() => nc.close());

/** Chunks of text cut at arbitrary places, as a stream delivers a file. */
function chunks(text: string, size = 97): AsyncIterable<string> {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return (async function* () {
    for (const part of parts) yield await Promise.resolve(part);
  })();
}

const THREADS = ["imp-a", "imp-b", "imp-c"];
const messages = Array.from({ length: 300 }, (_, i) => chatMessage(THREADS[i % 3] ?? "", i));
const bad = [
  "{not json",
  JSON.stringify({ ...messages[0], thread: "no spaces allowed" }),
  JSON.stringify({ ...messages[1], role: "robot" }),
];
// Line numbers (1-based) of the bad lines once placed: after line 10, 150 and the last.
const lines = messages.map((m) => JSON.stringify(m));
lines.splice(10, 0, bad[0] ?? "");
lines.splice(150, 0, bad[1] ?? "", "   ");
lines.push(bad[2] ?? "");
const file = `${lines.join("\r\n")}\n`;

/** The thread worker on `names`, small settings, and a harness reading its snapshots. */
async function startWorker(names: InfraNames) {
  const worker = await startSmallWorker({ nc, names });
  return { worker, h: await harness(nc, names) };
}

describe("outline import", () => {
  it("publishes the valid lines, reports each bad one by number, and applies nothing twice", async () => {
    const names = uniqueNames();
    const { jsm } = await ensureTopology(nc, names);
    const reported: number[] = [];
    const progress: string[] = [];
    const first = await importLines({
      nc,
      names,
      input: chunks(file),
      window: 16,
      expected: lines.length,
      progress: { isTTY: true, columns: 100, write: (t) => progress.push(t) },
      onBad: (line) => reported.push(line),
    });
    expect(first.bad.map((b) => b.line)).toEqual([11, 151, 304]);
    expect(reported).toEqual([11, 151, 304]);
    expect(first.bad[0]?.reason).toMatch(/^not JSON/);
    expect(first.bad[1]?.reason).toContain("thread");
    expect(first.bad[2]?.reason).toContain("role");
    expect(first).toMatchObject({ lines: 304, published: 300, duplicates: 0, blank: 1 });
    expect(first.failed).toEqual([]);
    expect((await jsm.streams.info(names.chatStream)).state.messages).toBe(300);
    // A bar redrawn in place on a terminal, ending at 100%.
    expect(progress.at(-1)).toMatch(/^\rimport \[#+\] 100% 304\/304/);
    expect(summarize(first, "f.jsonl")).toMatch(
      /^import f\.jsonl: 304 lines: 300 published, 0 already stored, 3 bad, 1 blank; /,
    );

    // Again, within the duplicate window: the stream keeps one copy.
    const again = await importLines({ nc, names, input: chunks(file) });
    expect(again).toMatchObject({ published: 0, duplicates: 300 });
    expect((await jsm.streams.info(names.chatStream)).state.messages).toBe(300);

    // After the window: what the worker applied is not published again; what it had not
    // (an import racing it) is stored again and applied once.
    const { worker, h } = await startWorker(names);
    try {
      const counted = async () =>
        (await Promise.all(THREADS.map((t) => readSnapshot(h, t)))).map((s) => s?.count ?? 0);
      await waitFor("the import applied", async () => (await counted()).every((c) => c === 100));
      const info = await jsm.streams.info(names.chatStream);
      await jsm.streams.update(names.chatStream, { ...info.config, duplicate_window: 100_000_000 });
      await new Promise((r) => setTimeout(r, 300));
      const applied = await openAppliedIds(nc, names);
      expect(applied).toBeDefined();
      const known = await importLines({
        nc,
        names,
        input: chunks(file),
        ...(applied ? { applied } : {}),
      }).finally(() => applied?.close());
      expect(known).toMatchObject({ published: 0, duplicates: 0, applied: 300 });
      expect(summarize(known, "f.jsonl")).toMatch(
        /^import f\.jsonl: 304 lines: 0 published, 0 already stored, 300 already applied, 3 bad, 1 blank; /,
      );
      expect((await jsm.streams.info(names.chatStream)).state.last_seq).toBe(300);
      const late = await importLines({ nc, names, input: chunks(file) });
      expect(late).toMatchObject({ published: 300, duplicates: 0, applied: 0 });
      const stored = (await jsm.streams.info(names.chatStream)).state.last_seq;
      expect(stored).toBe(600);
      await waitFor("the worker to read the copies", async () => {
        const c = await (
          await jetstreamManager(nc)
        ).consumers.info(names.chatStream, names.workerDurable);
        return c.delivered.stream_seq >= stored && c.num_ack_pending === 0;
      });
      expect(await counted()).toEqual([100, 100, 100]);
    } finally {
      await worker.stop();
    }
  });

  it("publishes again only the lines the worker has not applied, in file order", async () => {
    const names = uniqueNames();
    const { jsm } = await ensureTopology(nc, names);
    // No worker has run on these names: nothing to read, every line is published, and that is
    // not worth a word (a check that could not be made is).
    const unchecked: string[] = [];
    expect(await openAppliedIds(nc, names, (r) => unchecked.push(r))).toBeUndefined();
    expect(unchecked).toEqual([]);
    const { worker, h } = await startWorker(names);
    // imp-a: 60 of its 100 messages applied, cut (its older ids in the index); imp-y: two short
    // messages, its tail the whole thread (ids in the snapshot only); imp-n: never seen.
    const old = messages.filter((m) => m.thread === "imp-a");
    const young = [0, 1, 2].map((i) => ({ ...chatMessage("imp-y", i), text: `short ${i}` }));
    const fresh = [0, 1].map((i) => chatMessage("imp-n", i));
    const lines = (list: typeof messages) => list.map((m) => JSON.stringify(m)).join("\n");
    try {
      await importLines({
        nc,
        names,
        input: chunks(lines([...old.slice(0, 60), ...young.slice(0, 2)])),
      });
      await waitFor("the first import applied", async () => {
        const [a, y] = await Promise.all([readSnapshot(h, "imp-a"), readSnapshot(h, "imp-y")]);
        return a?.count === 60 && a.boundary > 0 && y?.count === 2;
      });
      const [a, y] = await Promise.all([readSnapshot(h, "imp-a"), readSnapshot(h, "imp-y")]);
      expect(a?.boundary).toBeGreaterThan(0);
      expect(y).toMatchObject({ boundary: 0, complete: true });
      const before = (await jsm.streams.info(names.chatStream)).state.last_seq;
      // Interleaved: old and young threads, their new messages and a new thread.
      const file = old.flatMap((m, i) => [m, ...(i < 3 ? [young[i], fresh[i]] : [])]);
      const all = file.filter((m): m is (typeof messages)[number] => m !== undefined);
      const applied = await openAppliedIds(nc, names);
      const again = await importLines({
        nc,
        names,
        input: chunks(lines(all), 500),
        window: 8,
        ...(applied ? { applied } : {}),
      }).finally(() => applied?.close());
      const expected = all.filter(
        (m) => !old.slice(0, 60).includes(m) && !young.slice(0, 2).includes(m),
      );
      expect(again).toMatchObject({ published: expected.length, applied: 62, duplicates: 0 });
      const stored: string[] = [];
      for (let seq = before + 1; seq <= before + expected.length; seq++) {
        const m = await jsm.streams.getMessage(names.chatStream, { seq });
        stored.push(m?.json<{ id: string }>().id ?? `no message at ${seq}`);
      }
      expect(stored).toEqual(expected.map((m) => m.id));
      expect((await jsm.streams.info(names.chatStream)).state.last_seq).toBe(
        before + expected.length,
      );
    } finally {
      await worker.stop();
    }
  });

  it("refuses a deleted thread's lines on every run, publishing none of them", async () => {
    const names = uniqueNames();
    const { jsm, js } = await ensureTopology(nc, names);
    const { worker, h } = await startWorker(names);
    const line = (thread: string, i: number) => JSON.stringify(chatMessage(thread, i));
    try {
      await importLines({ nc, names, input: chunks(`${line("many", 0)}\n${line("many", 1)}\n`) });
      await waitFor("the thread applied", async () => (await readSnapshot(h, "many"))?.count === 2);
      await js.publish(
        subjects(names).threadDeleted("many"),
        JSON.stringify({ thread: "many", at: "2026-01-02T00:00:00Z" }),
      );
      const deleted = await openDeletedThreads(nc, names);
      if (!deleted) throw new Error("the worker's actor bucket is not readable");
      await waitFor("the worker erased the thread", async () => {
        const fresh = await openDeletedThreads(nc, names);
        const gone = (await fresh?.isDeleted("many")) === true;
        fresh?.close();
        return gone && (await readSnapshot(h, "many")) === null;
      });
      // After the duplicate window, as a late re-run would be.
      const info = await jsm.streams.info(names.chatStream);
      await jsm.streams.update(names.chatStream, { ...info.config, duplicate_window: 100_000_000 });
      await new Promise((r) => setTimeout(r, 300));
      const dead = async () => (await jsm.streams.info(names.deadStream)).state.messages;
      const deadBefore = await dead();
      const before = (await jsm.streams.info(names.chatStream)).state.last_seq;
      const file = `${line("many", 0)}\n${line("other", 0)}\n${line("many", 2)}\n`;
      for (const run of [1, 2]) {
        const reported: number[] = [];
        const result = await importLines({
          nc,
          names,
          input: chunks(file),
          deleted,
          onBad: (n) => reported.push(n),
        });
        const reason = deletedThreadReason("many");
        expect(reason).toBe(
          "thread 'many' was deleted; its id takes no new messages (use a new thread id)",
        );
        expect({ run, bad: result.bad }).toEqual({
          run,
          bad: [
            { line: 1, reason },
            { line: 3, reason },
          ],
        });
        expect(reported).toEqual([1, 3]);
        expect(result.published + result.duplicates).toBe(1);
      }
      deleted.close();
      // Only the other thread's line was stored (once), and nothing went to the dead letters.
      expect((await jsm.streams.info(names.chatStream)).state.last_seq).toBe(before + 1);
      await waitFor("the worker applied the other thread", async () => {
        return (await readSnapshot(h, "other"))?.count === 1;
      });
      expect(await dead()).toBe(deadBefore);
    } finally {
      await worker.stop();
    }
  });

  it("fails a publish that no stream takes, naming its line, and goes on", async () => {
    const names = uniqueNames();
    // No topology: nothing takes the subjects.
    const result = await importLines({
      nc,
      names,
      input: chunks(`${JSON.stringify(messages[0])}\n`),
    });
    expect(result.published).toBe(0);
    expect(result.failed.map((f) => f.line)).toEqual([1]);
    expect(result.failed[0]?.reason).toContain("no stream");
  });
});
