import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { answerJoin, askJoin, joinSubject, type WorkerJoin } from "../services/cluster/instance.ts";
import { connectNats } from "../services/nats/connect.ts";
import { instanceHealth, natsHealth } from "../services/prompt-builder/health.ts";
import { uniqueNames } from "./support/thread-worker.ts";

// `npm start`'s prompt-builder says healthy only once its own worker joined (docs/scale-out.md,
// "Joining under load"): asked over NATS on the instance's subject, then no more.
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "instance-health" });
});
afterAll(async () => {
  await nc.close();
});

describe("an instance's /healthz", () => {
  it("is unhealthy until its worker answers joined, then stays healthy without asking", async () => {
    const subject = joinSubject(uniqueNames(), randomBytes(4).toString("hex"));
    let asked = 0;
    const health = instanceHealth(natsHealth(nc), () => {
      asked++;
      return askJoin(nc, subject, 500);
    });

    const silent = await health.check();
    expect(silent).toMatchObject({
      ok: false,
      nats: { connected: true },
      worker: { joined: false },
    });
    expect(silent.worker?.state).toContain("did not answer");

    let state: WorkerJoin = { joined: false, state: "joining: reads partitions [1]" };
    const sub = answerJoin(nc, subject, () => state);
    await nc.flush();
    expect(await health.check()).toMatchObject({ ok: false, worker: state });

    state = { joined: true, state: "member m, reads its share" };
    expect(await health.check()).toMatchObject({ ok: true, worker: state });
    const before = asked;
    sub.unsubscribe();
    // A worker busy under load (or gone: its instance stops) is not asked again.
    expect(await health.check()).toMatchObject({ ok: true, worker: state });
    expect(asked).toBe(before);
  });

  it("asks only its own instance's worker", async () => {
    const names = uniqueNames();
    const sub = answerJoin(nc, joinSubject(names, "other"), () => ({ joined: true, state: "x" }));
    try {
      await nc.flush();
      expect((await askJoin(nc, joinSubject(names, "mine"), 300)).joined).toBe(false);
      expect((await askJoin(nc, joinSubject(names, "other"), 300)).joined).toBe(true);
    } finally {
      sub.unsubscribe();
    }
  });
});
