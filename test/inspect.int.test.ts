import { existsSync, readFileSync } from "node:fs";
import { createServer, connect, type AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import { WebSocket } from "ws";
import { createActor } from "xstate";
import { afterEach, describe, expect, it } from "vitest";
import { run } from "../services/cli/inspect/run.ts";
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
    const summarizing = () => !actor.getSnapshot().matches({ thread: { active: "idle" } });
    expect(summarizing()).toBe(true);
    const pending = [...actor.getSnapshot().context.core.inflight];
    for (const ref of pending)
      actor.send({ type: "summary.built", ...ref, text: `summary of ${ref.index}` });

    await until(() => lines.some((l) => l.includes("summary.built")), "a summary.built transition");
    for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d\.\d{3} {2}insp-a {2}/);
    const untimed = lines.map((l) => l.slice(14));
    expect(untimed.slice(0, 7)).toEqual([
      expect.stringMatching(/^insp-a {2}actor registered \(session x:\d+\)$/),
      "insp-a  (new) --xstate.init--> slot.open,thread.active.idle  (count=0 boundary=0 lines=0 jobs=0)",
      "insp-a  slot.open,thread.active.idle --message.created--> slot.open,thread.active.idle  (count=1 boundary=0 lines=0 jobs=0 held=1)",
      "insp-a  slot.open,thread.active.idle --message.created--> slot.open,thread.active.cutting  (count=2 boundary=0 lines=0 jobs=2 waits=0+1)",
      "insp-a  slot.open,thread.active.cutting --message.created--> slot.open,thread.active.cutting  (count=3 boundary=0 lines=0 jobs=3 waits=0+1)",
      "insp-a  slot.open,thread.active.cutting --message.created--> slot.open,thread.active.cutting  (count=4 boundary=0 lines=0 jobs=4 waits=0+1)",
      "insp-a  slot.open,thread.active.cutting --summary.built--> slot.open,thread.active.cutting  (count=4 boundary=1 lines=1 jobs=3 waits=1+1)",
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

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The local addresses (hex, as the kernel writes them) listening on this TCP port. */
function listeners(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  return ["/proc/net/tcp", "/proc/net/tcp6"]
    .filter((file) => existsSync(file))
    .flatMap((file) => readFileSync(file, "utf8").split("\n").slice(1))
    .map((row) => row.trim().split(/\s+/))
    .filter((cols) => cols[1]?.endsWith(`:${hexPort}`) && cols[3] === "0A")
    .map((cols) => cols[1]!.split(":")[0]!);
}

const refused = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });

describe("outline inspect --online", () => {
  it.skipIf(!existsSync("/proc/net/tcp"))(
    "listens on 127.0.0.1 only, serves the bridge page and relays a worker's events to it",
    async () => {
      const port = await freePort();
      let stop!: () => void;
      const stopped = new Promise<void>((resolve) => (stop = resolve));
      let stderr = "";
      const opened: string[] = [];
      const done = run(["--online", "--port", String(port)], {
        stderr: { write: (t) => void (stderr += t) },
        until: stopped,
        openBrowser: (url) => opened.push(url),
      });
      try {
        await until(() => stderr.includes("open "), "the listening line");
        // 0100007F is 127.0.0.1; every interface would be 00000000 (or :: in tcp6).
        expect(listeners(port)).toEqual(["0100007F"]);
        const outside = Object.values(networkInterfaces())
          .flat()
          .find((a) => a && !a.internal && a.family === "IPv4");
        if (outside) expect(await refused(outside.address, port)).toBe(true);
        expect(stderr).toContain(`open http://127.0.0.1:${port}/ in a browser`);
        expect(stderr).toContain(`--inspect=ws://127.0.0.1:${port}`);
        expect(opened).toEqual([`http://127.0.0.1:${port}/`]);

        const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
        expect(page).toContain('<iframe id="inspector" src="https://stately.ai/inspect">');
        const browser = new WebSocket(`ws://127.0.0.1:${port}`);
        const received: string[] = [];
        browser.on("message", (data: Buffer) => received.push(data.toString("utf8")));
        await new Promise((resolve) => browser.once("open", resolve));
        const worker = new WebSocket(`ws://127.0.0.1:${port}`);
        await new Promise((resolve) => worker.once("open", resolve));
        worker.send(JSON.stringify({ type: "@xstate.event", sessionId: "x:1" }));
        await until(() => received.length === 1, "the relayed event");
        expect(JSON.parse(received[0]!)).toEqual({ type: "@xstate.event", sessionId: "x:1" });
        browser.close();
        worker.close();
      } finally {
        stop();
      }
      expect(await done).toBe(0);
    },
  );

  it("a port in use is an error that says how to pick another, exit 2", async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const { port } = busy.address() as AddressInfo;
    let stderr = "";
    try {
      const code = await run(["--online", "--port", String(port)], {
        stderr: { write: (t) => void (stderr += t) },
        until: new Promise(() => {}),
        openBrowser: () => {},
      });
      expect(code).toBe(2);
      expect(stderr).toBe(
        `inspect: port ${port} is in use; pick another with --port P and start the worker with --inspect=ws://127.0.0.1:P\n`,
      );
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });
});
