import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusterSubject, serveCluster, type ClusterAnswer } from "../services/cluster/view.ts";
import { uniqueNames } from "./support/thread-worker.ts";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connect({ servers: process.env.NATS_URL ?? "" });
});
afterAll(async () => {
  await nc?.drain();
});

const single: ClusterAnswer = { mode: "single", members: [], partitions: 0, leases: {} };

describe("<apiPrefix>.cluster over NATS", () => {
  it("carries Outline-Status like every API reply: 200 with the view, 500 when it fails", async () => {
    const names = uniqueNames();
    const logged: string[] = [];
    let fail = false;
    const api = serveCluster(
      nc,
      names,
      () =>
        fail ? Promise.reject(new Error("cluster bucket unreadable")) : Promise.resolve(single),
      (line) => logged.push(line),
    );
    try {
      const ok = await nc.request(clusterSubject(names), "", { timeout: 10_000 });
      expect(ok.headers?.get("Outline-Status")).toBe("200");
      expect(ok.json()).toEqual(single);

      fail = true;
      const failed = await nc.request(clusterSubject(names), "", { timeout: 10_000 });
      expect(failed.headers?.get("Outline-Status")).toBe("500");
      expect(failed.json()).toEqual({
        error: { code: "CLUSTER_UNAVAILABLE", message: "cluster bucket unreadable" },
      });
      expect(logged).toEqual(["prompt-builder: cluster view failed: cluster bucket unreadable"]);
    } finally {
      await api.drain();
    }
  });
});
