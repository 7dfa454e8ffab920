import type { ConsumerConfig, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { ConsumerPlacementError } from "../services/nats/leader-consumer.ts";
import { readInOrder } from "../services/nats/ordered-read.ts";

/**
 * A connection that takes the read's subscription and pulls and delivers nothing, and a manager
 * for a stream led by `leader` whose consumers are placed on `hosts` in turn (the last repeats);
 * each consumer holds nothing, so a read ends as soon as one is kept. The first requests to make
 * one fail with `failures`, in turn.
 */
function fakes(leader: string | undefined, hosts: (string | undefined)[], failures: Error[] = []) {
  const calls: string[] = [];
  let made = 0;
  const nc = {
    subscribe: () => ({ unsubscribe: () => undefined }),
    publish: () => undefined,
  } as unknown as NatsConnection;
  const jsm = {
    streams: {
      info: () => Promise.resolve(leader === undefined ? {} : { cluster: { leader } }),
    },
    consumers: {
      add: (_stream: string, config: Partial<ConsumerConfig>) => {
        const failure = failures.shift();
        if (failure) {
          calls.push(`add failed: ${failure.message}`);
          return Promise.reject(failure);
        }
        const host = hosts[Math.min(made, hosts.length - 1)];
        const name = `c${++made}`;
        calls.push(`add ${name} on ${host} from ${config.opt_start_seq ?? "start"}`);
        return Promise.resolve({
          name,
          num_pending: 0,
          ...(host === undefined ? {} : { cluster: { leader: host } }),
        });
      },
      delete: (_stream: string, name: string) => {
        calls.push(`delete ${name}`);
        return Promise.resolve(true);
      },
    },
  } as unknown as JetStreamManager;
  return { nc, jsm, calls };
}

const read = (nc: NatsConnection, jsm: JetStreamManager, onStart = (_: number) => {}) =>
  readInOrder(nc, jsm, "HISTORY", {}, onStart, () => undefined);

describe("an ordered read on a clustered stream", () => {
  it("keeps only a consumer placed on the stream's leader", async () => {
    const { nc, jsm, calls } = fakes("n1", ["n2", "n3", "n1"]);
    let total = -1;
    await read(nc, jsm, (n) => (total = n));
    expect(calls).toEqual([
      "add c1 on n2 from start",
      "delete c1",
      "add c2 on n3 from start",
      "delete c2",
      "add c3 on n1 from start",
      // The read ends (nothing pending) and frees its own consumer.
      "delete c3",
    ]);
    expect(total).toBe(0);
  });

  it("fails naming where its consumers went when none lands on the leader, and leaves none", async () => {
    const { nc, jsm, calls } = fakes("n1", ["n2", "n3"]);
    const reading = read(nc, jsm);
    await expect(reading).rejects.toThrow(
      /consumers in a row were placed off its leader \(on n2, n3\)/,
    );
    await expect(reading).rejects.toSatisfy(
      (err: Error) => err.cause instanceof ConsumerPlacementError,
    );
    const added = calls.filter((c) => c.startsWith("add")).length;
    expect(added).toBeGreaterThan(2);
    expect(calls.filter((c) => c.startsWith("delete"))).toHaveLength(added);
  });

  it("keeps the first consumer on one server (no placement to choose)", async () => {
    const { nc, jsm, calls } = fakes(undefined, [undefined]);
    await read(nc, jsm);
    expect(calls).toEqual(["add c1 on undefined from start", "delete c1"]);
  });

  it("asks again when a server rejoining times out, and not when the stream is not there", async () => {
    const timeout = Object.assign(new Error("timeout"), { name: "TimeoutError" });
    const rejoining = fakes("n1", ["n1"], [timeout, timeout]);
    await read(rejoining.nc, rejoining.jsm);
    expect(rejoining.calls).toEqual([
      "add failed: timeout",
      "add failed: timeout",
      "add c1 on n1 from start",
      "delete c1",
    ]);
    const gone = fakes("n1", ["n1"], [new Error("stream not found")]);
    await expect(read(gone.nc, gone.jsm)).rejects.toThrow(/stream not found/);
    expect(gone.calls).toEqual(["add failed: stream not found"]);
  });
});
