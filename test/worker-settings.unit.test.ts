import { describe, expect, it } from "vitest";
import { SettingsError } from "../shared/errors.ts";
import { workerSettings } from "../services/thread-worker/settings.ts";
import { DEFAULT_MAX_ACTORS } from "../services/thread-worker/worker.ts";

function refused(values: Record<string, string>): SettingsError {
  try {
    workerSettings(values);
  } catch (err) {
    expect(err).toBeInstanceOf(SettingsError);
    return err as SettingsError;
  }
  throw new Error("expected a SettingsError");
}

describe("worker settings (OUTLINE_* read by the thread worker)", () => {
  it("defaults when unset; the save linger is left to the worker", () => {
    expect(workerSettings({})).toEqual({
      idleMs: 60_000,
      maxActors: DEFAULT_MAX_ACTORS,
      ackWaitMs: 30_000,
      backlogLimit: 4_000,
      singlePeers: "refuse",
    });
  });

  it("reads each variable, including a save linger of 0 (save every burst at once)", () => {
    expect(
      workerSettings({
        OUTLINE_IDLE_MS: "5000",
        OUTLINE_ACK_WAIT_MS: "20000",
        OUTLINE_BACKLOG_LIMIT: "100",
        OUTLINE_SAVE_LINGER_MS: "0",
        OUTLINE_ALLOW_SINGLE_PEERS: "on",
        OUTLINE_MAX_ACTORS: "500",
      }),
    ).toEqual({
      idleMs: 5_000,
      maxActors: 500,
      ackWaitMs: 20_000,
      backlogLimit: 100,
      saveLingerMs: 0,
      singlePeers: "allow",
    });
    expect(workerSettings({ OUTLINE_MAX_ACTORS: "none" }).maxActors).toBe(Number.POSITIVE_INFINITY);
  });

  it("a bad value names its variable and what to write", () => {
    const idle = refused({ OUTLINE_IDLE_MS: "1m" });
    expect(idle.message).toMatch(/OUTLINE_IDLE_MS/);
    expect(idle.message).toMatch(/OUTLINE_IDLE_MS=60000/);
    expect(refused({ OUTLINE_BACKLOG_LIMIT: "0" }).message).toMatch(/OUTLINE_BACKLOG_LIMIT/);
    expect(refused({ OUTLINE_SAVE_LINGER_MS: "-5" }).message).toMatch(/OUTLINE_SAVE_LINGER_MS/);
    expect(refused({ OUTLINE_ALLOW_SINGLE_PEERS: "maybe" }).message).toMatch(
      /OUTLINE_ALLOW_SINGLE_PEERS.*'maybe'.*1, true, on/,
    );
    for (const bad of ["0", "20k", "-1", "unlimited"]) {
      const cap = refused({ OUTLINE_MAX_ACTORS: bad });
      expect(cap.message).toMatch(/OUTLINE_MAX_ACTORS/);
      expect(cap.message).toMatch(/OUTLINE_MAX_ACTORS=none/);
    }
  });

  it("refuses a save linger past a tenth of the ack wait, saying both limits", () => {
    const err = refused({ OUTLINE_ACK_WAIT_MS: "10000", OUTLINE_SAVE_LINGER_MS: "1500" });
    expect(err.message).toMatch(/OUTLINE_SAVE_LINGER_MS/);
    expect(err.message).toMatch(/at most 1000/);
    expect(
      workerSettings({ OUTLINE_ACK_WAIT_MS: "10000", OUTLINE_SAVE_LINGER_MS: "1000" }),
    ).toMatchObject({
      saveLingerMs: 1_000,
    });
  });
});
