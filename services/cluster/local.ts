import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import type { InfraNames } from "../config/names.ts";
import { connectNats } from "../nats/connect.ts";
import { findBinary, freePort, ManagedProcess, waitForPort } from "../util/processes.ts";
import { clusterNodeConfig, partitionMappings } from "./server-config.ts";
import { sleep } from "../util/wait.ts";

/** One nats-server of a local cluster. */
export interface LocalNode {
  name: string;
  url: string;
  process: ManagedProcess;
  /** SIGKILL: the node dies as a host would. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and store. */
  restart(): Promise<void>;
}

export interface LocalCluster {
  nodes: LocalNode[];
  /** Every node's URL, comma-separated: what NATS_URL takes. */
  url: string;
  stop(): Promise<void>;
}

export interface LocalClusterOptions {
  dir: string;
  /** Whose chat subjects get the partition mapping (tests map several sets of names). */
  names: InfraNames | readonly InfraNames[];
  partitions: number;
  /** First client port; cluster ports follow the client ports. Free ports when absent. */
  basePort?: number;
  host?: string;
  size?: number;
}

/**
 * Waits until the cluster has elected its JetStream meta leader and can place a stream on
 * `replicas` servers: a meta leader answers API requests before every peer has joined it, and an
 * R3 stream created then fails with "no suitable peers for placement" (seen on a loaded 2-core
 * machine), so a throwaway stream of that many replicas is made and removed.
 */
export async function jetStreamReady(url: string, timeoutMs: number, replicas = 1): Promise<void> {
  const nc = await connectNats({ url, name: "outline-cluster-ready", startupTimeoutMs: timeoutMs });
  const deadline = Date.now() + timeoutMs;
  const probe = `OUTLINE_READY_${randomUUID().slice(0, 8)}`;
  try {
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2_000 });
        await jsm.getAccountInfo();
        if (replicas > 1) {
          await jsm.streams.add({
            name: probe,
            subjects: [`_outline.ready.${probe}`],
            storage: StorageType.Memory,
            num_replicas: replicas,
          });
          await jsm.streams.delete(probe);
        }
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(
            `JetStream on ${url} did not become ready for ${replicas} replicas: ${(err as Error).message}`,
          );
        await sleep(250);
      }
    }
  } finally {
    await nc.close();
  }
}

/**
 * Starts `size` (3) nats-servers on loopback as one JetStream cluster, each with the partition
 * mapping of docs/scale-out.md: what `npm run cluster` and the cluster tests run.
 */
export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const binary = findBinary("nats-server");
  if (!binary)
    throw new Error("nats-server is not on PATH; install it (apt-get install nats-server)");
  const host = options.host ?? "127.0.0.1";
  const size = options.size ?? 3;
  const ports: { client: number; cluster: number }[] = [];
  for (let i = 0; i < size; i++) {
    ports.push(
      options.basePort !== undefined
        ? { client: options.basePort + i, cluster: options.basePort + size + i }
        : { client: await freePort(host), cluster: await freePort(host) },
    );
  }
  const mappings = partitionMappings(options.names, options.partitions);
  const nodes: LocalNode[] = ports.map((p, i) => {
    const name = `n${i + 1}`;
    const dir = join(options.dir, name);
    mkdirSync(dir, { recursive: true });
    const configFile = join(dir, "nats.conf");
    writeFileSync(
      configFile,
      clusterNodeConfig(
        {
          name,
          host,
          clientPort: p.client,
          clusterPort: p.cluster,
          routes: ports.map((q) => q.cluster),
          storeDir: join(dir, "store"),
        },
        mappings,
      ),
    );
    const spawn = () =>
      new ManagedProcess(name, binary, ["-c", configFile], {
        output: "quiet",
        logFile: join(dir, "nats-server.log"),
      });
    const node: LocalNode = {
      name,
      url: `nats://${host}:${p.client}`,
      process: spawn(),
      async kill() {
        await node.process.stop("SIGKILL", 5_000);
      },
      async restart() {
        node.process = spawn();
        if (!(await waitForPort(host, p.client, 15_000)))
          throw new Error(`nats-server ${name} did not come back on ${host}:${p.client}`);
      },
    };
    return node;
  });
  for (const [i, p] of ports.entries()) {
    if (!(await waitForPort(host, p.client, 15_000))) {
      await Promise.all(nodes.map((n) => n.process.stop("SIGKILL", 2_000)));
      throw new Error(`nats-server n${i + 1} did not listen on ${host}:${p.client}`);
    }
  }
  const url = nodes.map((n) => n.url).join(",");
  await jetStreamReady(url, 60_000, size);
  return {
    nodes,
    url,
    async stop() {
      await Promise.all(nodes.map((n) => n.process.stop("SIGINT", 10_000)));
    },
  };
}
