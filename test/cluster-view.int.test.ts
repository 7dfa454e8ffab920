import type { Server } from "node:http";
import { jetstream } from "@nats-io/jetstream";
import { TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { clusterBucket, openClusterBucket } from "../services/cluster/bucket.ts";
import {
  CLUSTER_RETRY_AFTER_S,
  clusterSubject,
  clusterView,
  serveCluster,
} from "../services/cluster/view.ts";
import { connectNats } from "../services/nats/connect.ts";
import type { Operations } from "../services/api/operations-interface.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { uniqueNames } from "./support/thread-worker.ts";

// GET /cluster while the cluster bucket's stream elects a leader: every request on the stream
// goes unanswered. Stood in for here by a connection on which those requests time out.
const names = { ...uniqueNames(), partitions: 2 };
let nc: NatsConnection;
let electing = false;
const logged: string[] = [];

/** `nc`, on which JetStream requests about the cluster bucket time out while `electing`. */
function duringElection(target: NatsConnection): NatsConnection {
  const stream = `KV_${clusterBucket(names)}`;
  return new Proxy(target, {
    get(t, prop) {
      if (prop === "request")
        return (subject: string, ...rest: unknown[]) =>
          electing && subject.includes(stream)
            ? Promise.reject(new TimeoutError())
            : (t.request as (...a: unknown[]) => Promise<unknown>)(subject, ...rest);
      const value: unknown = Reflect.get(t, prop, t);
      return typeof value === "function" ? (value as () => unknown).bind(t) : value;
    },
  });
}

async function serve(view: () => Promise<unknown>): Promise<{ base: string; server: Server }> {
  const server = createHttpServer({
    operations: {} as Operations,
    metrics: createMetrics(nc, { workerSubject: `${names.apiPrefix}.metrics.worker` }),
    health: natsHealth(nc),
    token: undefined,
    log: (line) => logged.push(line),
    cluster: view,
  });
  const base = `http://127.0.0.1:${(await listen(server, "127.0.0.1", 0)).port}`;
  return { base, server };
}

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "cluster-view-test" });
  const kv = await openClusterBucket(jetstream(nc), names, 1);
  await kv.put("layout", JSON.stringify({ partitions: 2 }));
});
afterAll(async () => {
  await nc?.close();
});

describe("GET /cluster during an election of the cluster bucket's leader", () => {
  it("answers 503 CLUSTER_UNAVAILABLE with Retry-After, first use and later", async () => {
    const view = clusterView(duringElection(nc), names);
    const { base, server } = await serve(view);
    try {
      // First use: the bucket is opened while it does not answer. Not "single mode".
      electing = true;
      const first = await fetch(`${base}/cluster`);
      expect(first.status).toBe(503);
      expect(first.headers.get("retry-after")).toBe(String(CLUSTER_RETRY_AFTER_S));
      const body = (await first.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("CLUSTER_UNAVAILABLE");
      expect(body.error.message).toContain(`KV_${clusterBucket(names)}`);

      electing = false;
      const ok = await fetch(`${base}/cluster`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ mode: "partitioned", partitions: 2 });

      // The bucket open, its reads time out.
      electing = true;
      const later = await fetch(`${base}/cluster`);
      expect(later.status).toBe(503);
      expect(later.headers.get("retry-after")).toBe(String(CLUSTER_RETRY_AFTER_S));
      expect(((await later.json()) as { error: { code: string } }).error.code).toBe(
        "CLUSTER_UNAVAILABLE",
      );
      expect(logged, "not a failure of the prompt-builder's own").toEqual([]);

      // The same over NATS: the status in Outline-Status.
      const api = serveCluster(nc, names, view, () => {});
      try {
        const reply = await nc.request(clusterSubject(names), "", { timeout: 5_000 });
        expect(reply.headers?.get("Outline-Status")).toBe("503");
        expect(reply.headers?.get("Retry-After")).toBe(String(CLUSTER_RETRY_AFTER_S));
        expect(reply.json<{ error: { code: string } }>().error.code).toBe("CLUSTER_UNAVAILABLE");
      } finally {
        await api.drain();
      }
    } finally {
      electing = false;
      await new Promise((r) => server.close(r));
    }
  });
});
