import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { run as inspect } from "../services/cli/inspect/run.ts";
import { connectNats } from "../services/nats/connect.ts";
import { MissingNatsServerError, startNatsServer } from "../services/start/nats-server.ts";
import { freePort, isPortFree } from "../services/util/processes.ts";
import type { Config } from "../services/config/load.ts";
import { runStart, type StartControl } from "../services/start/run.ts";
import { SERVICES } from "../services/start/services.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "outline-start-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function occupy(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("startNatsServer", () => {
  it("takes another port when the preferred one is busy, keeps data across restarts, and stops", async () => {
    const busy = await freePort();
    const blocker = await occupy(busy);
    const storeDir = join(dir, "nats");
    try {
      const first = await startNatsServer({ storeDir, preferredPort: busy });
      expect(first.port).not.toBe(busy);
      const nc = await connectNats({ url: first.url, name: "start-test" });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "KEPT", subjects: ["kept.>"], storage: "file" });
      await nc.close();
      const exit = await first.stop();
      expect(exit.code).toBe(0);
      expect(await isPortFree(first.port)).toBe(true);

      const second = await startNatsServer({ storeDir, preferredPort: busy });
      const nc2 = await connectNats({ url: second.url, name: "start-test-2" });
      expect((await (await jetstreamManager(nc2)).streams.info("KEPT")).config.name).toBe("KEPT");
      await nc2.close();
      await second.stop();
    } finally {
      blocker.close();
    }
  });

  it("says how to install nats-server when it is missing", async () => {
    const err = await startNatsServer({
      storeDir: join(dir, "nats"),
      binary: "nats-server-that-does-not-exist",
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(MissingNatsServerError);
    expect((err as Error).message).toContain("apt-get install -y nats-server");
    expect((err as Error).message).toContain("NATS_URL");
  });
});

// Stand-ins for the real services: they report what they were given and drain on SIGTERM.
const worker = `
import { writeFileSync } from "node:fs";
console.log("worker up with " + process.env.NATS_URL);
writeFileSync("worker.env", [process.env.NATS_URL, process.env.OUTLINE_CONFIG ?? "", process.env.OUTLINE_PARTITIONS ?? ""].join("\\n"));
process.on("SIGTERM", () => { writeFileSync("worker.drained", "yes"); process.exit(0); });
writeFileSync("worker.up", "yes");
setInterval(() => {}, 1000);
`;
const api = `
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
const server = createServer((req, res) => { res.writeHead(req.url === "/healthz" ? 200 : 404); res.end(); });
server.listen(Number(process.env.PORT), process.env.HOST, () => console.error("api: HTTP on " + process.env.PORT));
process.on("SIGTERM", () => server.close(() => { writeFileSync("api.drained", "yes"); process.exit(0); }));
`;
// Dies once the worker can drain (its SIGTERM handler is set): an event, not a 300 ms guess that
// a loaded host's worker start could outlast.
const crasher = `
import { existsSync } from "node:fs";
const die = () => { console.error("boom"); process.exit(3); };
const wait = () => (existsSync("worker.up") ? die() : setTimeout(wait, 20));
wait();
`;

/** What goes to this process's stdout and stderr (a service's lines, as they come) meanwhile. */
async function onTerminal<T>(run: () => Promise<T>): Promise<{ result: T; terminal: string }> {
  let terminal = "";
  const keep = (chunk: unknown) => {
    terminal += String(chunk);
    return true;
  };
  const out = vi.spyOn(process.stdout, "write").mockImplementation(keep);
  const err = vi.spyOn(process.stderr, "write").mockImplementation(keep);
  try {
    return { result: await run(), terminal };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

const count = (text: string, part: string) => text.split(part).length - 1;

function controllable() {
  let stop!: (why: string) => void;
  let force!: (why: string) => void;
  const control: StartControl = {
    stop: new Promise((r) => (stop = r)),
    force: new Promise((r) => (force = r)),
  };
  return { control, stop, force };
}

// The banner can come before a stand-in has run its first line; a stop then would test nothing.
function stopOnceWorkerIsUp(stop: () => void): void {
  const poll = setInterval(() => {
    // The file exists a moment before its content is written: wait for the content.
    const file = join(dir, "worker.env");
    if (!existsSync(file) || !readFileSync(file, "utf8").includes("\n")) return;
    clearInterval(poll);
    stop();
  }, 20);
}

describe("runStart", () => {
  it("starts nats-server and the services, prints the address, drains them on stop, then stops NATS", async () => {
    writeFileSync(join(dir, "worker.mjs"), worker);
    writeFileSync(join(dir, "api.mjs"), api);
    writeFileSync(join(dir, "outline.config.json"), JSON.stringify({ HISTORY_LINE: "256" }));
    const port = await freePort();
    const lines: string[] = [];
    const { control, stop } = controllable();
    const done = runStart(
      {
        services: [
          { name: "worker", entry: "worker.mjs" },
          { name: "api", entry: "api.mjs", http: true, ready: "api: HTTP on " },
        ],
        env: { ...process.env, NATS_URL: "", HOST: "127.0.0.1", PORT: String(port) },
        cwd: dir,
        out: (line) => {
          lines.push(line);
          if (line.startsWith("  stop:")) stopOnceWorkerIsUp(() => stop("SIGINT"));
        },
        err: (line) => lines.push(line),
      },
      control,
    );
    expect(await done).toBe(0);
    const text = lines.join("\n");
    expect(text).toContain("outline is running");
    expect(text).toContain("outline: SIGINT: draining the services, then stopping NATS…");
    expect(text).toContain(`HTTP API:      http://127.0.0.1:${port}`);
    expect(text).toContain(`explorer:      http://127.0.0.1:${port}/ui/`);
    expect(text).toContain("npx outline send <thread> <text>");

    const [natsUrl, configFile, partitions] = readFileSync(join(dir, "worker.env"), "utf8").split(
      "\n",
    );
    expect(natsUrl).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    expect(configFile).toBe(join(dir, "outline.config.json"));
    // Its own server maps chat subjects onto partitions, and the services are told how many.
    expect(partitions).toBe("32");
    expect(readFileSync(join(dir, ".data", "nats-server.conf"), "utf8")).toContain(
      '"chat.*.message.created": "chat.{{wildcard(1)}}.message.created.{{partition(32,1)}}"',
    );
    expect(existsSync(join(dir, "worker.drained"))).toBe(true);
    expect(existsSync(join(dir, "api.drained"))).toBe(true);
    expect(existsSync(join(dir, ".data", "nats", "jetstream"))).toBe(true);
    expect(await isPortFree(Number(natsUrl?.split(":")[2]))).toBe(true);
    expect(await isPortFree(port)).toBe(true);
  });

  it("stops everything with code 1 when a service dies, naming it; its error is shown once", async () => {
    writeFileSync(join(dir, "worker.mjs"), worker);
    writeFileSync(join(dir, "crasher.mjs"), crasher);
    const errors: string[] = [];
    const { control } = controllable();
    const { result: code, terminal } = await onTerminal(() =>
      runStart(
        {
          services: [
            { name: "worker", entry: "worker.mjs" },
            { name: "crasher", entry: "crasher.mjs" },
          ],
          env: { ...process.env, NATS_URL: "" },
          cwd: dir,
          out: () => {},
          err: (line) => errors.push(line),
        },
        control,
      ),
    );
    expect(code).toBe(1);
    // Its line came as it was written; the notice points at it rather than printing it again.
    expect(terminal).toContain("[crasher] boom\n");
    expect(count(`${terminal}${errors.join("\n")}`, "boom")).toBe(1);
    expect(errors.join("\n")).toContain(
      "crasher exited with code 3; stopping everything (its output is above, marked [crasher]).",
    );
    expect(existsSync(join(dir, "worker.drained"))).toBe(true);
  });

  it("uses NATS_URL when set instead of starting a server", async () => {
    writeFileSync(join(dir, "worker.mjs"), worker);
    const { control, stop } = controllable();
    const lines: string[] = [];
    const code = await runStart(
      {
        services: [{ name: "worker", entry: "worker.mjs" }],
        env: { ...process.env, NATS_URL: "nats://127.0.0.1:4999" },
        cwd: dir,
        out: (line) => {
          lines.push(line);
          if (line.startsWith("  stop:")) stopOnceWorkerIsUp(() => stop("SIGTERM"));
        },
        err: () => {},
      },
      control,
    );
    expect(code).toBe(0);
    // The server is not ours: the stop does not claim to stop it.
    expect(lines).toContain("outline: SIGTERM: draining the services…");
    expect(readFileSync(join(dir, "worker.env"), "utf8")).toMatch(/^nats:\/\/127\.0\.0\.1:4999\n/);
    expect(existsSync(join(dir, ".data"))).toBe(false);
  });

  it("starts a service with a condition only when its setting is on (HISTORY_SEARCH)", async () => {
    writeFileSync(join(dir, "worker.mjs"), worker);
    const services = [
      { name: "worker", entry: "worker.mjs" },
      // Missing on purpose: looked for only when wanted.
      { name: "search", entry: "search.mjs", when: (c: Config) => c.settings.search },
    ];
    const errors: string[] = [];
    const off = controllable();
    const code = await runStart(
      {
        services,
        env: { ...process.env, NATS_URL: "nats://127.0.0.1:4999", HISTORY_SEARCH: "off" },
        cwd: dir,
        out: (line) => line.startsWith("  stop:") && stopOnceWorkerIsUp(() => off.stop("SIGTERM")),
        err: (line) => errors.push(line),
      },
      off.control,
    );
    expect(code).toBe(0);
    const on = await runStart(
      {
        services,
        env: { ...process.env, NATS_URL: "nats://127.0.0.1:4999", HISTORY_SEARCH: "on" },
        cwd: dir,
        out: () => {},
        err: (line) => errors.push(line),
      },
      controllable().control,
    );
    expect(on).toBe(1);
    expect(errors.join("\n")).toContain("search.mjs is missing");
  });

  it("passes `npm start -- --inspect=URL` to the thread worker only, and says so", async () => {
    const argvOf = (name: string) =>
      // Written whole, then renamed: the test stops the services once both files exist, and an
      // empty file seen between create and write failed a loaded CI run.
      `import { renameSync, writeFileSync } from "node:fs"; writeFileSync(${JSON.stringify(`${name}.argv.tmp`)}, JSON.stringify(process.argv.slice(2))); renameSync(${JSON.stringify(`${name}.argv.tmp`)}, ${JSON.stringify(`${name}.argv`)}); process.on("SIGTERM", () => process.exit(0)); setInterval(() => {}, 1000);`;
    const services = SERVICES.filter((s) => s.when === undefined).map((s) => {
      writeFileSync(join(dir, `${s.name}.mjs`), argvOf(s.name));
      return { ...s, entry: `${s.name}.mjs`, http: false };
    });
    const lines: string[] = [];
    const { control, stop } = controllable();
    const inspectPort = await freePort();
    const inspectArg = `--inspect=ws://127.0.0.1:${inspectPort}`;
    const code = await runStart(
      {
        services,
        argv: [inspectArg],
        env: { ...process.env, NATS_URL: "nats://127.0.0.1:4999" },
        cwd: dir,
        out: (line) => {
          lines.push(line);
          if (!line.startsWith("  stop:")) return;
          const poll = setInterval(() => {
            if (
              !["thread-worker", "prompt-builder"].every((n) => existsSync(join(dir, `${n}.argv`)))
            )
              return;
            clearInterval(poll);
            stop("SIGTERM");
          }, 20);
        },
        err: () => {},
      },
      control,
    );
    expect(code).toBe(0);
    const argv = (name: string) =>
      JSON.parse(readFileSync(join(dir, `${name}.argv`), "utf8")) as unknown;
    expect(argv("thread-worker")).toEqual([inspectArg]);
    expect(argv("prompt-builder")).toEqual([]);
    const line = lines.find((l) => l.startsWith("  inspector:"));
    expect(line).toBe(
      `  inspector:     the worker's thread actors (${inspectArg}); ` +
        `watch: npx outline inspect --port ${inspectPort}`,
    );

    // The command as printed listens where the worker sends.
    const printed = (line ?? "").split("watch: npx outline inspect")[1] ?? "";
    let said = "";
    let listening!: () => void;
    const until = new Promise<void>((resolve) => (listening = resolve));
    const inspected = inspect(printed.trim().split(/\s+/).filter(Boolean), {
      stdout: { write: () => {} },
      stderr: {
        write: (text) => {
          said += text;
          listening();
        },
      },
      until,
    });
    expect(await inspected).toBe(0);
    expect(said).toContain(`listening on ws://127.0.0.1:${inspectPort};`);
  });

  it("refuses HOST off loopback without a token once, before anything starts, with no banner", async () => {
    // A stand-in that would say it started; the real prompt-builder would refuse, then die.
    writeFileSync(
      join(dir, "api.mjs"),
      `import { writeFileSync } from "node:fs"; writeFileSync("api.up", "yes");`,
    );
    const builder = SERVICES.find((s) => s.name === "prompt-builder");
    const lines: string[] = [];
    const errors: string[] = [];
    const code = await runStart(
      {
        services: [{ ...builder, name: "prompt-builder", entry: "api.mjs" }],
        env: { PATH: process.env.PATH, HOST: "0.0.0.0", PORT: String(await freePort()) },
        cwd: dir,
        out: (line) => lines.push(line),
        err: (line) => errors.push(line),
      },
      controllable().control,
    );
    expect(code).toBe(1);
    expect(errors).toEqual([
      expect.stringMatching(
        /^outline: bad setting: OUTLINE_API_TOKEN: is required when HOST=0\.0\.0\.0 \(not a loopback address\).*set HOST=127\.0\.0\.1$/,
      ),
    ]);
    expect(lines).toEqual([]);
    expect(existsSync(join(dir, "api.up"))).toBe(false);
    expect(existsSync(join(dir, ".data"))).toBe(false);
  });

  it("prints no banner when the HTTP service dies before it answers, only why", async () => {
    writeFileSync(join(dir, "worker.mjs"), worker);
    writeFileSync(join(dir, "api.mjs"), `console.error("cannot listen"); process.exit(1);`);
    const lines: string[] = [];
    const errors: string[] = [];
    const port = String(await freePort());
    const { result: code, terminal } = await onTerminal(() =>
      runStart(
        {
          services: [
            { name: "worker", entry: "worker.mjs" },
            { name: "api", entry: "api.mjs", http: true },
          ],
          env: { ...process.env, NATS_URL: "nats://127.0.0.1:4999", PORT: port },
          cwd: dir,
          out: (line) => lines.push(line),
          err: (line) => errors.push(line),
        },
        controllable().control,
      ),
    );
    expect(code).toBe(1);
    expect(lines.filter((l) => l.startsWith("outline is") || l.startsWith("  "))).toEqual([]);
    expect(errors.join("\n")).toContain("api exited with code 1");
    expect(terminal).toContain("[api] cannot listen\n");
    expect(count(`${terminal}${errors.join("\n")}`, "cannot listen")).toBe(1);
  });

  it("refuses a PORT another server answers /healthz on, before anything starts, with no banner", async () => {
    writeFileSync(join(dir, "worker.mjs"), worker);
    writeFileSync(join(dir, "api.mjs"), api);
    const port = await freePort();
    const other = createHttpServer((req, res) => {
      res.writeHead(req.url === "/healthz" ? 200 : 404);
      res.end();
    });
    await new Promise<void>((resolve) => other.listen(port, "127.0.0.1", resolve));
    try {
      // With a local nats-server (its folder lock is let go) and with NATS_URL.
      for (const natsUrl of ["", "nats://127.0.0.1:4999"]) {
        const lines: string[] = [];
        const errors: string[] = [];
        const code = await runStart(
          {
            services: [
              { name: "worker", entry: "worker.mjs" },
              { name: "prompt-builder", entry: "api.mjs", http: true, ready: "api: HTTP on " },
            ],
            env: { ...process.env, NATS_URL: natsUrl, HOST: "127.0.0.1", PORT: String(port) },
            cwd: dir,
            out: (line) => lines.push(line),
            err: (line) => errors.push(line),
          },
          controllable().control,
        );
        expect(code).toBe(1);
        expect(lines).toEqual([]);
        expect(errors).toEqual([
          `outline: PORT: 127.0.0.1:${port} is already in use, so the prompt-builder cannot ` +
            `serve there; nothing was started. Stop what listens there (another npm start?) or ` +
            `set PORT to a free port`,
        ]);
        expect(existsSync(join(dir, "worker.up"))).toBe(false);
        expect(existsSync(join(dir, ".data", "nats"))).toBe(false);
        expect(existsSync(join(dir, ".data", "start.lock"))).toBe(false);
      }
    } finally {
      other.close();
    }
  });

  it("does not call the system running while another process answers on its port", async () => {
    // The port is free when start looks, then taken (here by the worker) before the HTTP service
    // binds it: that service fails and stays up, while /healthz answers from the other process.
    writeFileSync(
      join(dir, "taker.mjs"),
      `import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
createServer((req, res) => { res.writeHead(200); res.end(); })
  .listen(Number(process.env.PORT), "127.0.0.1", () => writeFileSync("taken", "yes"));
process.on("SIGTERM", () => process.exit(0));`,
    );
    writeFileSync(
      join(dir, "api.mjs"),
      `import { createServer } from "node:http";
import { existsSync } from "node:fs";
const listen = () => createServer().once("error", (e) => console.error("api: " + e.code))
  .listen(Number(process.env.PORT), "127.0.0.1", () => console.error("api: HTTP on"));
const wait = () => (existsSync("taken") ? listen() : setTimeout(wait, 20));
wait();
process.on("SIGTERM", () => process.exit(0));
setInterval(() => {}, 1000);`,
    );
    const port = await freePort();
    const lines: string[] = [];
    const { control, stop } = controllable();
    const { result: code } = await onTerminal(() =>
      runStart(
        {
          services: [
            { name: "taker", entry: "taker.mjs" },
            { name: "api", entry: "api.mjs", http: true, ready: "api: HTTP on" },
          ],
          env: { ...process.env, NATS_URL: "nats://127.0.0.1:4999", PORT: String(port) },
          cwd: dir,
          readyTimeoutMs: 8_000,
          out: (line) => {
            lines.push(line);
            if (line.startsWith("  stop:")) stop("SIGTERM");
          },
          err: (line) => lines.push(line),
        },
        control,
      ),
    );
    expect(code).toBe(0);
    expect(existsSync(join(dir, "taken"))).toBe(true);
    expect(lines).toContain(
      "outline is starting (GET /healthz is not healthy yet: the HTTP API or the worker's join)",
    );
    expect(lines).not.toContain("outline is running");
  });

  it("refuses to start when a service file is missing or a setting is bad", async () => {
    const errors: string[] = [];
    const options = {
      services: [{ name: "ghost", entry: "services/ghost/main.ts" }],
      cwd: dir,
      out: () => {},
      err: (line: string) => errors.push(line),
    };
    expect(await runStart({ ...options, env: {} }, controllable().control)).toBe(1);
    expect(errors.join("\n")).toContain("services/ghost/main.ts is missing");
    expect(await runStart({ ...options, env: { PORT: "x" } }, controllable().control)).toBe(1);
    expect(errors.join("\n")).toContain("bad setting: PORT");
    expect(existsSync(join(dir, ".data"))).toBe(false);
  });
});
