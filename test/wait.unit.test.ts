import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { isTransient, isTransientWhileRejoining } from "../services/nats/transient.ts";
import { backoffMs, sleep, StoppedError } from "../services/util/wait.ts";

const apiError = (err_code: number, code: number, description: string) =>
  new JetStreamApiError({ err_code, code, description });

describe("one backoff formula", () => {
  it("doubles from the base up to the cap, unrounded without jitter", () => {
    // A start's steps: 250 ms doubling to 4 s (startup-step.ts); model calls: 1 s to 30 s.
    expect([0, 1, 2, 3, 4, 5, 9].map((a) => backoffMs(a, 250, 4_000, 0))).toEqual([
      250, 500, 1_000, 2_000, 4_000, 4_000, 4_000,
    ]);
    expect(backoffMs(40, 1_000, 30_000, 0)).toBe(30_000);
    expect(backoffMs(3, 0.5, 100, 0)).toBe(4);
  });

  it("spreads each wait within ±20 % by default, so threads that failed together part", () => {
    const waits = Array.from({ length: 500 }, () => backoffMs(2, 100, 5_000));
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(320);
    expect(Math.max(...waits)).toBeLessThanOrEqual(480);
    expect(new Set(waits).size).toBeGreaterThan(20);
    expect(waits.every(Number.isInteger)).toBe(true);
  });
});

describe("one sleep", () => {
  it("waits, or rejects with StoppedError when its signal aborts", async () => {
    await expect(sleep(1)).resolves.toBeUndefined();
    const stop = new AbortController();
    const waiting = sleep(60_000, stop.signal);
    stop.abort();
    await expect(waiting).rejects.toBeInstanceOf(StoppedError);
    await expect(sleep(1, stop.signal)).rejects.toBeInstanceOf(StoppedError);
    await expect(sleep(1, undefined, { unref: true })).resolves.toBeUndefined();
  });
});

describe("one transient rule, and what a rejoin adds to it", () => {
  const noResponders = new RequestError("no responders", { cause: new NoRespondersError("x") });
  const cases: [string, unknown, boolean, boolean][] = [
    // [what, error, isTransient, isTransientWhileRejoining]
    ["a timeout", new TimeoutError(), true, true],
    ["a request error", new RequestError("x", { cause: new TimeoutError() }), true, true],
    ["JetStream's 503", apiError(10008, 503, "temporarily unavailable"), true, true],
    ["JetStream off for the account", apiError(10039, 503, "not enabled for account"), false, true],
    ["JetStream off", apiError(10076, 503, "jetstream not enabled"), false, true],
    ["a request no one answered", noResponders, false, true],
    ["a stream not found", apiError(10059, 404, "stream not found"), false, false],
    ["any other error", new Error("boom"), false, false],
  ];
  it.each(cases)("%s", (_, err, transient, rejoining) => {
    expect(isTransient(err)).toBe(transient);
    expect(isTransientWhileRejoining(err)).toBe(rejoining);
  });
});
