// A private nats-server for one bench: file storage in a temp dir, a free port, stopped and its
// files removed at the end. A bench never touches the machine's :4222 or another bench's data.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { DEFAULT_NAMES, type InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { ensureTopology } from "../../services/nats/topology.ts";
import { startNatsServer, type LocalNats } from "../../services/start/nats-server.ts";

export interface BenchServer {
  url: string;
  names: InfraNames;
  /** The server's process id, e.g. to read its CPU time from /proc. */
  pid: number | undefined;
  /** A new client connection (each is closed by `stop`). */
  connect(name: string): Promise<NatsConnection>;
  stop(): Promise<void>;
}

export async function startBenchServer(label: string): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), `outline-bench-${label}-`));
  let server: LocalNats;
  try {
    server = await startNatsServer({
      storeDir: join(dir, "store"),
      preferredPort: 0,
      logFile: join(dir, "nats.log"),
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const connections: NatsConnection[] = [];
  const names: InfraNames = { ...DEFAULT_NAMES };
  const connect = async (name: string) => {
    const nc = await connectNats({ url: server.url, name: `bench-${label}-${name}` });
    connections.push(nc);
    return nc;
  };
  await ensureTopology(await connect("topology"), names);
  return {
    url: server.url,
    names,
    pid: server.process.child.pid,
    connect,
    async stop() {
      await Promise.allSettled(connections.map((nc) => nc.close()));
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
