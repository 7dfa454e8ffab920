import { createActor } from "xstate";
import { afterEach, describe, expect, it } from "vitest";
import { startInspectServer, type InspectServer } from "../services/cli/inspect/server.ts";
import { formatLine } from "../services/cli/inspect/transitions.ts";
import { createWorkerInspector, inspectUrlFromArgv } from "../services/thread-worker/inspect.ts";
import { threadMachine } from "../machines/thread.ts";
import { parseSettings } from "../shared/settings.ts";
import { makeMessage } from "./support/conversation.ts";

const settings = parseSettings({
  HISTORY_LINE: "64",
  HISTORY_TAIL: "20,40",
  HISTORY_OUTLINE: "2000,4000",
});

let server: InspectServer | undefined;
const stops: (() => void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await server?.close();
  server = undefined;
});

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function threadActor(thread: string, url: string) {
  const inspector = createWorkerInspector(url);
  stops.push(() => inspector.stop());
  const actor = createActor(threadMachine, {
    input: { thread, settings },
    inspect: inspector.inspect,
  });
  actor.start();
  stops.push(() => actor.stop());
  return actor;
}

describe("outline inspect", () => {
  it("receives a thread actor's registration and each transition: thread, from, event, to", async () => {
    const lines: string[] = [];
    server = await startInspectServer({ port: 0, onLine: (line) => lines.push(formatLine(line)) });
    const actor = threadActor("insp-a", `ws://127.0.0.1:${server.port}`);
    // A long message: its leaf needs the summarizer; it waits for its group (held) until the
    // second message plans a cut, which takes every wanted leaf at once.
    for (let i = 0; i < 4; i++) {
      actor.send({
        type: "message.created",
        message: makeMessage("insp-a", i, "word ".repeat(40)),
        seq: i + 1,
      });
    }
    const summarizing = () => !actor.getSnapshot().matches({ active: "idle" });
    expect(summarizing()).toBe(true);
    const pending = [...actor.getSnapshot().context.core.inflight];
    for (const ref of pending)
      actor.send({ type: "summary.built", ...ref, text: `summary of ${ref.index}` });

    await until(() => lines.some((l) => l.includes("summary.built")), "a summary.built transition");
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} {2}insp-a {2}/);
    const untimed = lines.map((l) => l.slice(14));
    expect(untimed.slice(0, 7)).toEqual([
      expect.stringMatching(/^insp-a {2}actor registered \(session x:\d+\)$/),
      "insp-a  (new) --xstate.init--> active.idle  (count=0 boundary=0 lines=0 jobs=0)",
      "insp-a  active.idle --message.created--> active.idle  (count=1 boundary=0 lines=0 jobs=0 held=1)",
      "insp-a  active.idle --message.created--> active.cutting  (count=2 boundary=0 lines=0 jobs=2 waits=0+1)",
      "insp-a  active.cutting --message.created--> active.cutting  (count=3 boundary=0 lines=0 jobs=3 waits=0+1)",
      "insp-a  active.cutting --message.created--> active.cutting  (count=4 boundary=0 lines=0 jobs=4 waits=0+1)",
      "insp-a  active.cutting --summary.built--> active.cutting  (count=4 boundary=1 lines=1 jobs=3 waits=1+1)",
    ]);
  });

  it("--thread keeps one thread's lines and drops the others'", async () => {
    const lines: string[] = [];
    server = await startInspectServer({
      port: 0,
      thread: "insp-keep",
      onLine: (line) => lines.push(formatLine(line)),
    });
    const url = `ws://127.0.0.1:${server.port}`;
    const other = threadActor("insp-drop", url);
    const kept = threadActor("insp-keep", url);
    other.send({ type: "message.created", message: makeMessage("insp-drop", 0, "hi"), seq: 1 });
    kept.send({ type: "message.created", message: makeMessage("insp-keep", 0, "hi"), seq: 2 });
    await until(
      () => lines.some((l) => l.includes("message.created")),
      "the kept thread's transition",
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(lines.every((l) => l.includes("  insp-keep  "))).toBe(true);
    expect(lines.some((l) => l.includes("insp-drop"))).toBe(false);
  });

  it("--inspect flag: default URL, explicit URL, and a clear error for a non-WebSocket URL", () => {
    expect(inspectUrlFromArgv([])).toBeUndefined();
    expect(inspectUrlFromArgv(["--inspect"])).toBe("ws://127.0.0.1:8787");
    expect(inspectUrlFromArgv(["--inspect=ws://127.0.0.1:9999"])).toBe("ws://127.0.0.1:9999");
    expect(() => inspectUrlFromArgv(["--inspect=http://x"])).toThrow(
      /not a WebSocket URL; write --inspect=ws:/,
    );
  });

  it("a port in use is an error that says how to pick another", async () => {
    server = await startInspectServer({ port: 0, onLine: () => {} });
    await expect(startInspectServer({ port: server.port, onLine: () => {} })).rejects.toThrow(
      `port ${server.port} is in use; pick another with --port P`,
    );
  });
});
