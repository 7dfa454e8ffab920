import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalCluster, type LocalCluster } from "../../services/cluster/local.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import type { ThreadWorker } from "../../services/thread-worker/worker.ts";
import { uniqueNames } from "../support/thread-worker.ts";
import { startSmallWorker } from "../support/worker-scope.ts";

// `npm run cluster -- --instances 2` on a fresh cluster: two instances make the same R3 streams
// and buckets at the same moment. The second one's requests met a stream still electing its
// first leader, which answers nothing, and its worker died on a bare "timeout" (2 runs of 2 in
// the audit, 1 of 1 here before the fix). Each step of the start is now asked again.
const PARTITIONS = 4;
const names = { ...uniqueNames(), partitions: PARTITIONS };
let dir: string;
let cluster: LocalCluster;
const connections: NatsConnection[] = [];
const workers: ThreadWorker[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-concurrent-start-"));
  cluster = await startLocalCluster({ dir, names, partitions: PARTITIONS });
}, 120_000);
afterAll(async () => {
  for (const w of workers) await w.stop().catch(() => {});
  for (const nc of connections) await nc.close().catch(() => {});
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** One instance's worker start, as thread-worker/main.ts does it, on the cluster's node `i`. */
async function instance(i: number, warnings: string[]): Promise<ThreadWorker> {
  const nc = await connectNats({ url: cluster.nodes[i]?.url ?? "", name: `instance-${i}` });
  connections.push(nc);
  const log = {
    info: () => {},
    warn: (line: string) => warnings.push(line),
    error: (line: string) => warnings.push(line),
  };
  await ensureTopology(nc, names, { replicas: 3, log: log.warn });
  const worker = await startSmallWorker({ nc, names }, { replicas: 3, log, failoverMs: 3_000 });
  workers.push(worker);
  return worker;
}

describe("two instances starting at once on a fresh R3 cluster", () => {
  it("both start and split the partitions", async () => {
    const warnings: string[][] = [[], []];
    const started = await Promise.allSettled([
      instance(0, warnings[0]!),
      instance(1, warnings[1]!),
    ]);
    const failures = started.flatMap((r) =>
      r.status === "rejected" ? [(r.reason as Error).message] : [],
    );
    expect(failures, `warnings: ${JSON.stringify(warnings)}`).toEqual([]);
    const [a, b] = workers;
    const owned = [...(a?.membership?.owned() ?? []), ...(b?.membership?.owned() ?? [])];
    // Each member holds its partitions; together at most all of them, none twice.
    expect(new Set(owned).size).toBe(owned.length);
    expect(a?.membership?.id).not.toBe(b?.membership?.id);
  });
});
