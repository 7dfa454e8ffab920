import { JetStreamApiError } from "@nats-io/jetstream";
import { TimeoutError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import {
  FIRST_ATTEMPT_MS,
  isTransientAtStart,
  startupStep,
  StartupStepError,
  STARTUP_RETRY_MS,
} from "../services/nats/startup-step.ts";

// A step of a start meeting a cluster that is making the same stream for another instance, or
// electing its first leader: asked again for a bounded time, then named when it gives up.
const apiError = (err_code: number, code: number, description: string) =>
  new JetStreamApiError({ err_code, code, description });

/** A clock that moves only when the step waits, and the waits it was asked for. */
function fakeTime(requestMs = 0) {
  let t = 0;
  const waits: number[] = [];
  return {
    waits,
    now: () => t,
    sleep: (ms: number) => {
      waits.push(ms);
      t += ms;
      return Promise.resolve();
    },
    /** A request that takes `requestMs` and then fails with `err`. */
    failing: (err: Error) => () => {
      t += requestMs;
      return Promise.reject(err);
    },
  };
}

describe("startupStep", () => {
  it("asks again a create whose first request timed out, and returns what the next finds", async () => {
    const time = fakeTime(5_000);
    const lines: string[] = [];
    let calls = 0;
    const info = await startupStep(
      "creating stream KV_outline-cluster (R3)",
      () => {
        calls += 1;
        // The first add met the other instance's create of the same stream: no answer.
        return calls === 1 ? time.failing(new TimeoutError())() : Promise.resolve("the stream");
      },
      { now: time.now, sleep: time.sleep, log: (line) => lines.push(line) },
    );
    expect(info).toBe("the stream");
    expect(calls).toBe(2);
    expect(lines).toEqual([
      "creating stream KV_outline-cluster (R3): timeout (attempt 1); asking again in 250 ms",
    ]);
  });

  it("asks again a request left unanswered for its attempt's time, each attempt given longer", async () => {
    const time = fakeTime();
    const lines: string[] = [];
    const given: number[] = [];
    let calls = 0;
    const value = await startupStep(
      "reading key 'layout' of bucket outline-cluster",
      () => {
        calls += 1;
        // Sent while the bucket's stream had no leader: dropped, never answered.
        return calls < 3 ? new Promise<string>(() => {}) : Promise.resolve("layout");
      },
      {
        now: time.now,
        sleep: time.sleep,
        log: (line) => lines.push(line),
        attemptTimer: (ms) => {
          given.push(ms);
          return Promise.resolve();
        },
        transient: () => false,
      },
    );
    expect(value).toBe("layout");
    expect(calls).toBe(3);
    expect(given).toEqual([FIRST_ATTEMPT_MS, 2 * FIRST_ATTEMPT_MS, 4 * FIRST_ATTEMPT_MS]);
    expect(lines[0]).toBe(
      `reading key 'layout' of bucket outline-cluster: no answer in ${FIRST_ATTEMPT_MS} ms (attempt 1); asking again in 250 ms`,
    );
  });

  it("gives up after its time, naming the step, its attempts and how long", async () => {
    const time = fakeTime(5_000);
    const err = await startupStep(
      "creating stream KV_outline-cluster (R3)",
      time.failing(new TimeoutError()),
      { now: time.now, sleep: time.sleep },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupStepError);
    const message = (err as Error).message;
    expect(message).toMatch(
      /^creating stream KV_outline-cluster \(R3\) timed out \(\d+ attempt\(s\) over \d+\.\d s\)/,
    );
    expect((err as Error).cause).toBeInstanceOf(TimeoutError);
    // Bounded: the requests and the waits between them end within the step's time and one request.
    expect(time.now()).toBeLessThanOrEqual(STARTUP_RETRY_MS + 5_000);
    expect(time.waits.every((ms) => ms > 0 && ms <= 4_000)).toBe(true);
  });

  it("throws at once what asking again cannot fix", async () => {
    const time = fakeTime();
    let calls = 0;
    const overlap = apiError(10065, 400, "subjects overlap with an existing stream");
    const err = await startupStep(
      "creating stream CHAT (R3)",
      () => {
        calls += 1;
        return Promise.reject(overlap);
      },
      { now: time.now, sleep: time.sleep },
    ).catch((e: unknown) => e);
    expect(err).toBe(overlap);
    expect(calls).toBe(1);
  });

  it("tells what a cluster making or electing answers from what it never fixes", () => {
    expect(isTransientAtStart(new TimeoutError())).toBe(true);
    expect(
      isTransientAtStart(apiError(10008, 503, "JetStream system temporarily unavailable")),
    ).toBe(true);
    // Made a moment ago by another instance with another config: found when asked again.
    expect(isTransientAtStart(apiError(10058, 400, "stream name already in use"))).toBe(true);
    const noLeader = new Error("jetstream is not enabled");
    noLeader.name = "JetStreamNotEnabled";
    expect(isTransientAtStart(noLeader)).toBe(true);
    expect(isTransientAtStart(apiError(10039, 503, "jetstream not enabled for account"))).toBe(
      false,
    );
    expect(isTransientAtStart(apiError(10059, 404, "stream not found"))).toBe(false);
    expect(isTransientAtStart(new Error("OUTLINE_PARTITIONS is 8 but the cluster runs 32"))).toBe(
      false,
    );
  });
});
