import { TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import type { ThreadWorker } from "../services/thread-worker/worker.ts";
import { uniqueNames } from "./support/thread-worker.ts";
import { startSmallWorker } from "./support/worker-scope.ts";

// A start on a cluster where every JetStream request is slow: an R3 create, or a request on a
// stream another instance made a moment ago and that has no leader yet, answers after the
// client's timeout (or never). Stood in for on one server, deterministically: the first request
// of each subject is carried out and its answer reported lost (a TimeoutError). Before, the
// worker died on the first of them with a bare "timeout" (`npm run cluster -- --instances 2`).
let nc: NatsConnection | undefined;
let worker: ThreadWorker | undefined;
afterEach(async () => {
  await worker?.stop().catch(() => {});
  worker = undefined;
  await nc?.close();
  nc = undefined;
});

/** `target`, whose first JetStream request of each subject is carried out, then times out. */
function answersLate(target: NatsConnection, late: Set<string>): NatsConnection {
  const seen = new Set<string>();
  return new Proxy(target, {
    get(t, prop) {
      if (prop === "request")
        return async (subject: string, ...rest: unknown[]) => {
          const reply: unknown = await (t.request as (...a: unknown[]) => Promise<unknown>)(
            subject,
            ...rest,
          );
          const js = subject.startsWith("$JS.API") || subject.startsWith("$KV.");
          // A consumer's create names it (a watch's, new each time): one per stream is late.
          const kind = subject.startsWith("$JS.API.CONSUMER.CREATE.")
            ? subject.split(".").slice(0, 5).join(".")
            : subject;
          if (!js || seen.has(kind)) return reply;
          seen.add(kind);
          late.add(subject);
          throw new TimeoutError();
        };
      const value: unknown = Reflect.get(t, prop, t);
      return typeof value === "function" ? (value as () => unknown).bind(t) : value;
    },
  });
}

describe("a start whose JetStream requests answer late", () => {
  it("asks each again, says so, and the partitioned worker joins", async () => {
    const names = { ...uniqueNames(), partitions: 2 };
    nc = await connectNats({ url: inject("natsUrl"), name: "late-answers" });
    const late = new Set<string>();
    const slow = answersLate(nc, late);
    const warnings: string[] = [];
    const log = {
      info: () => {},
      warn: (line: string) => warnings.push(line),
      error: (line: string) => warnings.push(line),
    };
    await ensureTopology(slow, names, { log: log.warn });
    worker = await startSmallWorker({ nc: slow, names }, { log, failoverMs: 1_000 });
    expect(worker.membership?.owned()).toEqual([0, 1]);
    // Every step met a late answer, and the log names the step that was asked again.
    for (const what of [
      "reading the JetStream account",
      `reading stream ${names.chatStream}`,
      `creating bucket ${names.kvBucket} (stream KV_${names.kvBucket}, R1)`,
      `creating bucket ${names.kvBucket}-actors (stream KV_${names.kvBucket}-actors, R1)`,
      `creating bucket ${names.kvBucket}-cluster (stream KV_${names.kvBucket}-cluster, R1)`,
      `reading key 'layout' of bucket ${names.kvBucket}-cluster`,
      `watching bucket ${names.kvBucket}-cluster`,
    ])
      expect(
        warnings.some((line) => line.replace(/^cluster: /, "").startsWith(what)),
        what,
      ).toBe(true);
    expect(late.size).toBeGreaterThan(10);
  });
});
