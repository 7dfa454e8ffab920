import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterEach, expect } from "vitest";
import type { CoreSettings } from "../../shared/settings.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { startNatsServer, type LocalNats } from "../../services/start/nats-server.ts";
import { freePort } from "../../services/util/processes.ts";
import {
  expectedSnapshot,
  harness,
  readSnapshot,
  uniqueNames,
  type Harness,
} from "../support/thread-worker.ts";
import { workerEnv, WorkerProcess } from "../support/worker-process.ts";

export { BuilderProcess } from "../support/builder-process.ts";

// What the fault tests share: a nats-server of their own (file storage in a temp dir, a free
// port, never the run's global server nor :4222), services as processes, and the closing check
// that every thread's snapshot equals the pure core's on the same log and summaries.

export interface OwnNats {
  dir: string;
  server: LocalNats;
  url: string;
  /** Stops the server (clean JetStream shutdown) and starts it again on the same port and store. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnNats(
  options: { configFile?: string; env?: NodeJS.ProcessEnv; maxFileStore?: string } = {},
): Promise<OwnNats> {
  const dir = mkdtempSync(join(tmpdir(), "outline-fault-"));
  const port = await freePort("127.0.0.1");
  const start = () =>
    startNatsServer({
      storeDir: join(dir, "store"),
      preferredPort: port,
      logFile: join(dir, "nats-server.log"),
      ...(options.configFile ? { configFile: options.configFile } : {}),
      ...(options.env ? { env: options.env } : {}),
    });
  const own: OwnNats = {
    dir,
    server: await start(),
    url: `nats://127.0.0.1:${port}`,
    async restart() {
      await own.server.stop();
      own.server = await start();
      if (own.server.port !== port) throw new Error(`nats-server came back on another port`);
    },
    async stop() {
      await own.server.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return own;
}

/** A test's own names and topology on `url`, with a harness connected as `auth` says. */
export async function ownHarness(
  url: string,
  names: InfraNames = uniqueNames(),
  auth?: { user: string; password: string },
): Promise<Harness> {
  const nc: NatsConnection = await connectNats({
    url,
    name: "fault-test",
    ...(auth ? { auth: { kind: "user", ...auth } } : {}),
  });
  if (!auth) await ensureTopology(nc, names);
  return harness(nc, names);
}

export function spawnWorker(
  url: string,
  names: InfraNames,
  settings: CoreSettings,
  extra: Record<string, string> = {},
): WorkerProcess {
  return new WorkerProcess(
    workerEnv(url, names, settings, { OUTLINE_ACK_WAIT_MS: "3000", ...extra }),
  );
}

/** What one fault test starts, all stopped after it whatever happened: processes first. */
export interface FaultScope {
  processes: { child: ChildProcess; exited: Promise<unknown> }[];
  /** Extra teardown steps (watchers, timers), run first. */
  stops: (() => void)[];
  nats?: OwnNats | undefined;
  fake?: { close(): Promise<void> } | undefined;
  h?: Harness | undefined;
}

/** Registers the teardown every fault test file needs and returns what it will stop. */
export function faultScope(): FaultScope {
  const scope: FaultScope = { processes: [], stops: [] };
  afterEach(async () => {
    for (const stop of scope.stops.splice(0)) stop();
    await killAll(scope.processes);
    await scope.h?.nc.close();
    await scope.fake?.close();
    await scope.nats?.stop();
    scope.h = undefined;
    scope.fake = undefined;
    scope.nats = undefined;
  });
  return scope;
}

/** Kills what is still running and waits for it to exit. */
export async function killAll(
  processes: { child: ChildProcess; exited: Promise<unknown> }[],
): Promise<void> {
  for (const p of processes.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await p.exited;
  }
}

/** The closing check of every fault test: each thread equals the pure core on its log. */
export async function expectMatchesCleanRun(
  h: Harness,
  threads: string[],
  settings: CoreSettings,
): Promise<void> {
  for (const thread of threads) {
    const actual = await readSnapshot(h, thread);
    expect(actual, `snapshot of ${thread}`).toEqual(await expectedSnapshot(h, thread, settings));
    expect(actual?.count, `messages of ${thread}`).toBe(h.log.get(thread)?.length);
  }
}
