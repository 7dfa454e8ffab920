import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import type { Message } from "../shared/events.ts";
import { OUTLINE_HEADER } from "../shared/prompt.ts";
import type { OutlineSnapshot } from "../shared/snapshot.ts";
import { BuilderProcess, killAll } from "./faults/support.ts";
import {
  SMALL,
  chatMessage,
  harness,
  publishMessage,
  readSnapshot,
  uniqueNames,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { WorkerProcess, workerEnv } from "./support/worker-process.ts";

// The whole system as processes (worker + prompt-builder) on the run's nats-server, with small
// settings that force many cuts and merges: what an agent reads is what the contract says.

interface PromptBody {
  messages: { role: string; content: string; state?: unknown }[];
  stats: { lines: number; outlineBytes: number; tailTokens: number };
}
interface ZoomLines {
  lines: { id: number; n: number; text: string; until: string }[];
}
interface ZoomMessage {
  message: { id: string; position: number; from: string; at: string; text: string };
}

const names = uniqueNames();
let h: Harness;
let worker: WorkerProcess;
let builder: BuilderProcess;
const A = "sys-a";
const B = "sys-b";
const original = new Map<string, Message>();

beforeAll(async () => {
  const url = inject("natsUrl");
  const nc = await connectNats({ url, name: "system-e2e" });
  await ensureTopology(nc, names);
  h = await harness(nc, names);
  worker = new WorkerProcess(workerEnv(url, names, SMALL));
  await worker.ready();
  builder = await BuilderProcess.start(url, names, SMALL);
  const publish = async (thread: string, count: number) => {
    for (let i = 0; i < count; i++) {
      const m = chatMessage(thread, i);
      original.set(m.id, m);
      await publishMessage(h, m);
    }
  };
  await Promise.all([publish(A, 600), publish(B, 200)]);
  await waitSettled(h, [A, B], 120_000);
}, 180_000);

afterAll(async () => {
  await killAll([worker, builder]);
  await h?.nc.close();
});

async function get<T>(path: string): Promise<{ status: number; body: T }> {
  const r = await builder.get(path);
  return { status: r.status, body: r.body as T };
}

describe("the system as processes", () => {
  it("lays out the prompt: header, <chat>, the outline's lines, </chat>, then the tail whole", async () => {
    const snapshot = (await readSnapshot(h, A)) as OutlineSnapshot;
    expect(snapshot.boundary).toBeGreaterThan(0);
    const { status, body } = await get<PromptBody>(`/threads/${A}/prompt?agent=north`);
    expect(status).toBe(200);
    const [outline, ...tail] = body.messages;
    const lines = snapshot.lines.map((l) => `${l.id}+${l.n}|${l.text.replace(/\s*\n\s*/g, " ")}`);
    expect(outline).toEqual({
      role: "user",
      content: `${OUTLINE_HEADER}\n<chat>\n${lines.join("\n")}\n</chat>`,
    });
    expect(body.stats.lines).toBe(snapshot.lines.length);
    expect(tail).toHaveLength(snapshot.tail.length);
    tail.forEach((m, k) => {
      const source = original.get(snapshot.tail[k] ?? "") as Message;
      if (source.from === "north") {
        expect(m).toMatchObject({ role: "assistant", content: source.text });
        // Model state only when written after the last cut.
        const fresh =
          source.state !== undefined && Date.parse(source.at) > Date.parse(snapshot.cutAt ?? "");
        expect(m.state).toEqual(fresh ? source.state : undefined);
      } else {
        expect(m).toEqual({ role: "user", content: `Ana: ${source.text}` });
      }
    });
  });

  it("the `from` window leaves out lines whose newest message is older", async () => {
    const snapshot = (await readSnapshot(h, A)) as OutlineSnapshot;
    const middle = snapshot.lines[Math.floor(snapshot.lines.length / 2)];
    const from = middle?.until ?? "";
    const { body } = await get<PromptBody>(
      `/threads/${A}/prompt?agent=north&from=${encodeURIComponent(from)}`,
    );
    const kept = snapshot.lines.filter((l) => Date.parse(l.until) >= Date.parse(from));
    expect(kept.length).toBeLessThan(snapshot.lines.length);
    expect(body.stats.lines).toBe(kept.length);
    expect(body.messages[0]?.content).toContain(`\n<chat>\n${kept[0]?.id}+${kept[0]?.n}|`);
  });

  it("zooming down every line reaches every original message exactly once", async () => {
    const snapshot = (await readSnapshot(h, A)) as OutlineSnapshot;
    const seen = new Map<number, number>();
    const open = async (id: number, n: number): Promise<void> => {
      if (n === 1) {
        const { status, body } = await get<ZoomMessage>(`/threads/${A}/zoom?id=${id}&n=1`);
        expect(status).toBe(200);
        const source = original.get(body.message.id) as Message;
        expect(body.message).toMatchObject({
          position: id,
          text: source.text,
          from: source.from,
          at: source.at,
        });
        seen.set(id, (seen.get(id) ?? 0) + 1);
        return;
      }
      const { status, body } = await get<ZoomLines>(`/threads/${A}/zoom?id=${id}&n=${n}`);
      expect(status).toBe(200);
      expect(body.lines.map((l) => [l.id, l.n])).toEqual([
        [id, n / 2],
        [id + n / 2, n / 2],
      ]);
      for (const line of body.lines) await open(line.id, line.n);
    };
    for (const line of snapshot.lines) await open(line.id, line.n);
    expect(seen.size).toBe(snapshot.boundary);
    for (let p = 0; p < snapshot.boundary; p++) expect(seen.get(p), `message ${p}`).toBe(1);
  });

  it("thread.deleted leaves the API answering 404 for the thread, and the other thread intact", async () => {
    await h.js.publish(
      h.s.threadDeleted(B),
      new TextEncoder().encode(JSON.stringify({ thread: B, at: "2026-02-01T00:00:00Z" })),
    );
    await waitFor(
      "thread B's snapshot to be erased",
      async () => (await readSnapshot(h, B)) === null,
      30_000,
    );
    for (const path of [
      `/threads/${B}/prompt?agent=north`,
      `/threads/${B}/outline`,
      `/threads/${B}/zoom?id=0&n=1`,
    ]) {
      const { status, body } = await get<{ error: { code: string; message: string } }>(path);
      expect(status, path).toBe(404);
      expect(body.error.code).toBe("THREAD_NOT_FOUND");
      // Not only "publish a message to it first": that one would be dead-lettered.
      expect(body.error.message).toContain("a deleted thread's id takes no new messages");
    }
    expect((await get<PromptBody>(`/threads/${A}/prompt?agent=north`)).status).toBe(200);
  });
});
