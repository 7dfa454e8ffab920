import { describe, expect, it } from "vitest";
import {
  chatMessage,
  publishMessage,
  readSnapshot,
  SMALL,
  waitFor,
  waitSettled,
} from "../support/thread-worker.ts";
import { openAIEnv, startSlowOpenAI } from "./slow-openai.ts";
import {
  BuilderProcess,
  expectMatchesCleanRun,
  faultScope,
  ownHarness,
  spawnWorker,
  startOwnNats,
} from "./support.ts";

// Fault: the model endpoint fails with 503, then hangs (the client's 1 s timeout fires), then
// recovers. Meanwhile threads keep taking messages, the prompt-builder keeps serving prompts (the
// tail grows past its bound up to the hard cap of 2 × tail[1]; past it the prompt says which
// messages are pending), and after recovery everything catches up with no message lost.

const scope = faultScope();
const { processes } = scope;

interface Prompt {
  messages: { role: string; content: string }[];
  stats: { pending: number; tailTokens: number };
}

describe("fault: summarizer outage (503, then hanging, then back)", () => {
  it("threads take messages and prompts are served throughout; all catches up after", async () => {
    const nats = (scope.nats = await startOwnNats());
    const fake = (scope.fake = await startSlowOpenAI({ kind: "ok", minMs: 5, maxMs: 20 }));
    const h = (scope.h = await ownHarness(nats.url));
    const harness = h;
    const worker = spawnWorker(nats.url, harness.names, SMALL, openAIEnv(fake, 1_000));
    processes.push(worker);
    await worker.ready();
    const builder = await BuilderProcess.start(nats.url, harness.names, SMALL);
    processes.push(builder);
    const threads = ["o1", "o2"];
    const publish = (from: number, to: number) =>
      Promise.all(
        threads.map(async (t) => {
          for (let i = from; i < to; i++) await publishMessage(harness, chatMessage(t, i));
        }),
      );
    const prompt = async (t: string) => {
      const r = await builder.get(`/threads/${t}/prompt?agent=north`);
      expect(r.status, r.text.slice(0, 200)).toBe(200);
      return r.body as Prompt;
    };
    const count = async (t: string) => (await readSnapshot(harness, t))?.count ?? 0;

    await publish(0, 40);
    await waitSettled(harness, threads);

    // 503: messages are still applied, and the prompt stays within the hard cap.
    fake.setMode({ kind: "503" });
    await publish(40, 100);
    await waitFor("messages applied during the outage", async () => (await count("o1")) === 100);
    await waitFor(
      "the prompt to name pending messages",
      async () => (await prompt("o1")).stats.pending > 0,
    );
    const during = await prompt("o1");
    expect(during.stats.tailTokens).toBeLessThanOrEqual(2 * SMALL.tail[1]);
    expect(
      during.messages.some((m) => /waiting to be summarized and not shown here/.test(m.content)),
    ).toBe(true);
    expect(fake.counts["503"]).toBeGreaterThan(0);

    // Hanging: the client's timeout fires; messages still applied, prompts still served.
    fake.setMode({ kind: "hang" });
    await publish(100, 130);
    await waitFor("calls to hang", () => fake.counts.hang >= 2, 20_000);
    await waitFor("messages applied while hanging", async () => (await count("o2")) === 130);
    expect((await prompt("o2")).stats.pending).toBeGreaterThan(0);

    // Back: every pending summary is built and every thread catches up.
    fake.setMode({ kind: "ok", minMs: 5, maxMs: 20 });
    await publish(130, 140);
    await waitSettled(harness, threads, 90_000);
    await expectMatchesCleanRun(harness, threads, SMALL);
    expect((await prompt("o1")).stats.pending).toBe(0);
    expect(worker.child.exitCode).toBeNull();
  });
});
