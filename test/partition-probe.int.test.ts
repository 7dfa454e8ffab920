import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { partitionMappings } from "../services/cluster/server-config.ts";
import { connectNats } from "../services/nats/connect.ts";
import { probeChatMapping, withServerPartitions } from "../services/nats/partition-probe.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { startNatsServer, type LocalNats } from "../services/start/nats-server.ts";
import { uniqueNames } from "./support/thread-worker.ts";

// How a service learns the partition count from the server's mapping (SPEC §3): probes that
// come back mapped, and are stored by no stream.
let dir: string;
let mapped: LocalNats;
const names = uniqueNames();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-probe-"));
  const configFile = join(dir, "nats.conf");
  writeFileSync(configFile, partitionMappings(names, 24));
  mapped = await startNatsServer({ storeDir: join(dir, "store"), preferredPort: 0, configFile });
});
afterAll(async () => {
  await mapped?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("the server's chat mapping", () => {
  it("names the mapping's partition count, and the probes are stored nowhere", async () => {
    const nc = await connectNats({ url: mapped.url, name: "probe-test" });
    try {
      await ensureTopology(nc, { ...names, partitions: 24 });
      expect(await probeChatMapping(nc, names.chatPrefix)).toEqual({
        kind: "mapped",
        partitions: 24,
      });
      const found = await withServerPartitions(nc, names);
      expect(found.names.partitions).toBe(24);
      expect(found.note).toContain("onto 24 partitions");
      const info = await (await jetstreamManager(nc)).streams.info(names.chatStream);
      expect(info.state.messages).toBe(0);
      expect(info.state.last_seq).toBe(0);
      // A count set that differs from the mapping's is refused, naming the right one.
      await expect(withServerPartitions(nc, { ...names, partitions: 32 })).rejects.toThrow(
        /OUTLINE_PARTITIONS=24/,
      );
    } finally {
      await nc.close();
    }
  });

  it("finds none on a server without the mapping", async () => {
    const nc = await connectNats({ url: inject("natsUrl"), name: "probe-test-plain" });
    try {
      const own = uniqueNames();
      await ensureTopology(nc, own);
      expect(await probeChatMapping(nc, own.chatPrefix)).toEqual({ kind: "plain" });
      expect((await withServerPartitions(nc, own)).names.partitions).toBeUndefined();
      const info = await (await jetstreamManager(nc)).streams.info(own.chatStream);
      expect(info.state.messages).toBe(0);
    } finally {
      await nc.close();
    }
  });
});
