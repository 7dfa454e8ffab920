// An in-process thread worker test's set-up: its own names and topology on the run's
// nats-server, a harness, workers started with small settings and a quiet log, and everything
// stopped and closed after each test.
import type { NatsConnection } from "@nats-io/transport-node";
import { afterEach, inject } from "vitest";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { quietLogger } from "../../services/thread-worker/log.ts";
import {
  startThreadWorker,
  type ThreadWorker,
  type ThreadWorkerOptions,
} from "../../services/thread-worker/worker.ts";
import { FakeSummarizer, harness, SMALL, uniqueNames, type Harness } from "./thread-worker.ts";

export interface WorkerScope {
  /** Another connection to the run's nats-server, closed after the test. */
  connect(name: string): Promise<NatsConnection>;
  /** A connection, fresh names with their topology, and a harness over them. */
  setup(name: string): Promise<{ nc: NatsConnection; h: Harness }>;
  /** A worker on `h` (SMALL settings, fake summarizer, quiet log unless `extra` says otherwise). */
  start(h: Harness, extra?: Partial<ThreadWorkerOptions>): Promise<ThreadWorker>;
  /** Stops the workers started so far (the test goes on with new ones). */
  stopWorkers(): Promise<void>;
  /** A worker the test stopped or crashed itself: not stopped again after the test. */
  forget(worker: ThreadWorker): void;
}

/** A worker on `h`: SMALL settings, fake summarizer, quiet log, unless `extra` says otherwise. */
export function startSmallWorker(
  h: Pick<Harness, "nc" | "names">,
  extra: Partial<ThreadWorkerOptions> = {},
): Promise<ThreadWorker> {
  return startThreadWorker({
    nc: h.nc,
    names: h.names,
    settings: SMALL,
    summarizer: new FakeSummarizer(),
    log: quietLogger,
    snapshotDelayMs: 20,
    ...extra,
  });
}

export function workerScope(): WorkerScope {
  const connections: NatsConnection[] = [];
  const workers: ThreadWorker[] = [];
  const stopWorkers = async () => {
    for (const w of workers.splice(0)) await w.stop().catch(() => {});
  };
  afterEach(async () => {
    await stopWorkers();
    for (const nc of connections.splice(0)) await nc.close().catch(() => {});
  });
  const connect = async (name: string) => {
    const nc = await connectNats({ url: inject("natsUrl"), name });
    connections.push(nc);
    return nc;
  };
  return {
    connect,
    async setup(name) {
      const names = uniqueNames();
      const nc = await connect(name);
      await ensureTopology(nc, names);
      return { nc, h: await harness(nc, names) };
    },
    async start(h, extra = {}) {
      const worker = await startSmallWorker(h, extra);
      workers.push(worker);
      return worker;
    },
    stopWorkers,
    forget(worker) {
      const at = workers.indexOf(worker);
      if (at >= 0) workers.splice(at, 1);
    },
  };
}
