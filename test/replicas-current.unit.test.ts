import type { JetStreamManager, PeerInfo, StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { readInOrder } from "../services/nats/ordered-read.ts";
import { laggingReplicas, ReplicasBehindError } from "../services/nats/replicas.ts";

const peer = (name: string, current: boolean, lag: number, offline = false): PeerInfo => ({
  name,
  current,
  lag,
  offline,
  active: 0,
});
const infoWith = (replicas?: PeerInfo[]): StreamInfo =>
  ({ cluster: replicas && { name: "c", leader: "n1", replicas } }) as unknown as StreamInfo;

describe("laggingReplicas", () => {
  it("names each online replica not current or behind, and nothing on one server", () => {
    expect(laggingReplicas({} as StreamInfo)).toEqual([]);
    expect(laggingReplicas(infoWith([peer("n2", true, 0), peer("n3", true, 0)]))).toEqual([]);
    expect(laggingReplicas(infoWith([peer("n2", false, 0), peer("n3", true, 7)]))).toEqual([
      "n2 (0 behind)",
      "n3 (7 behind)",
    ]);
  });

  it("leaves out an offline replica: no consumer is placed there", () => {
    expect(laggingReplicas(infoWith([peer("n2", false, 40, true), peer("n3", true, 0)]))).toEqual(
      [],
    );
  });
});

/**
 * A connection that takes the read's subscription and pulls and delivers nothing, and a manager
 * whose stream info answers from `infos` in turn (the last repeats); each consumer it makes
 * holds nothing, so the read ends as soon as one is made.
 */
function fakes(infos: (StreamInfo | Error)[]) {
  const calls: string[] = [];
  let asked = 0;
  const nc = {
    subscribe: () => ({ unsubscribe: () => undefined }),
    publish: () => undefined,
  } as unknown as NatsConnection;
  const jsm = {
    streams: {
      info: (stream: string) => {
        calls.push(`info ${stream}`);
        const answer = infos[Math.min(asked++, infos.length - 1)];
        return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
      },
    },
    consumers: {
      add: (stream: string) => {
        calls.push(`add ${stream}`);
        return Promise.resolve({ name: "c1", num_pending: 0 });
      },
      delete: () => Promise.resolve(true),
    },
  } as unknown as JetStreamManager;
  return { nc, jsm, calls };
}

describe("readInOrder on a clustered stream", () => {
  it("makes its consumer only once every replica has caught up", async () => {
    const behind = infoWith([peer("n2", false, 120), peer("n3", true, 0)]);
    const current = infoWith([peer("n2", true, 0), peer("n3", true, 0)]);
    const { nc, jsm, calls } = fakes([behind, behind, current]);
    let total = -1;
    await readInOrder(
      nc,
      jsm,
      "HISTORY",
      {},
      (n) => (total = n),
      () => undefined,
    );
    expect(calls).toEqual(["info HISTORY", "info HISTORY", "info HISTORY", "add HISTORY"]);
    expect(total).toBe(0);
  });

  it("fails with the replica's name when it stays behind, and reads nothing", async () => {
    const { nc, jsm, calls } = fakes([infoWith([peer("n2", false, 120)])]);
    const read = readInOrder(
      nc,
      jsm,
      "CHAT",
      { currentWithinMs: 150 },
      () => {},
      () => {},
    );
    await expect(read).rejects.toThrow(ReplicasBehindError);
    await expect(read).rejects.toThrow(/CHAT: replica n2 \(120 behind\) still catching up/);
    expect(calls.filter((c) => c.startsWith("add"))).toEqual([]);
  });

  it("does not wait when the stream info fails (an election): the consumer's request decides", async () => {
    const { nc, jsm, calls } = fakes([new Error("503 no responders")]);
    await readInOrder(
      nc,
      jsm,
      "CHAT",
      {},
      () => {},
      () => {},
    );
    expect(calls).toEqual(["info CHAT", "add CHAT"]);
  });
});
