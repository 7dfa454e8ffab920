import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import {
  joinCluster,
  openClusterBucket,
  type Membership,
} from "../../services/cluster/membership.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { faultScope, startOwnNats } from "../faults/support.ts";
import { uniqueNames, waitFor } from "../support/thread-worker.ts";

// A lease's write can be stored while its reply is lost (a request timing out on a loaded
// cluster): the member then holds a lease it does not know of. Left so (CI's case (b) of the
// cluster test), the partition was never read and never handed over. Here the first write of
// lease 1 is stored and then answered with an error.
const scope = faultScope();

/** `js` whose first publish to `subject` is stored, then reported failed. */
function losingFirstReply(js: JetStreamClient, suffix: string): JetStreamClient {
  let lost = false;
  return new Proxy(js, {
    get(target, prop) {
      if (prop === "publish")
        return async (...args: Parameters<JetStreamClient["publish"]>) => {
          const ack = await target.publish(...args);
          if (lost || !args[0].endsWith(suffix)) return ack;
          lost = true;
          throw new Error("TIMEOUT (the reply was lost)");
        };
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
}

describe("membership when a lease's reply is lost", () => {
  it("reads the partition it leased all the same, and lets it go on leaving", async () => {
    const nats = (scope.nats = await startOwnNats());
    const names = uniqueNames();
    const nc = await connectNats({ url: nats.url, name: "member" });
    const acquired: number[] = [];
    const warnings: string[] = [];
    let member: Membership | undefined;
    try {
      member = await joinCluster({
        js: losingFirstReply(jetstream(nc), ".lease.1"),
        names,
        partitions: 2,
        replicas: 1,
        failoverMs: 1_000,
        log: { info: () => {}, warn: (line) => warnings.push(line) },
        stats: () => ({ threads: 0, lag: 0 }),
        acquire: (ks) => {
          acquired.push(...ks);
          return Promise.resolve();
        },
        release: () => Promise.resolve(),
      });
      const m = member;
      await waitFor("lease 1 to be read", () => m.owned().length === 2, 10_000);
      expect(acquired.sort(), "each partition opened once").toEqual([0, 1]);
      expect(warnings.join("\n")).toContain("found partitions 1 leased to us");
      await m.leave();
      const kv = await openClusterBucket(jetstream(nc), names, 1);
      for (const k of [0, 1])
        expect((await kv.get(`lease.${k}`))?.operation, `lease ${k} after leaving`).toBe("DEL");
    } finally {
      member?.abandon();
      await nc.close();
    }
  });
});
