import type { KvWatchEntry } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { watchFromCurrent, type WatchLike } from "../services/cluster/watch-current.ts";

// A member joining waits for its watch of the cluster bucket to deliver every current value
// (up to the stream's last revision, read from its leader). A watch whose consumer sits on a
// replica that is behind stops short: it hung the join for 2.5 minutes, silently.
const entry = (revision: number): KvWatchEntry =>
  ({ key: `member.m${revision}`, revision, operation: "PUT" }) as KvWatchEntry;

/** A watch delivering `revisions`, then nothing more until stopped (a replica behind). */
function stalledWatch(revisions: number[]): WatchLike & { stopped: boolean } {
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const watch = {
    stopped: false,
    stop() {
      watch.stopped = true;
      stop();
    },
    async *[Symbol.asyncIterator]() {
      for (const r of revisions) yield entry(r);
      await stopped;
    },
  };
  return watch;
}

describe("watchFromCurrent", () => {
  it("makes the watch again when it stalls below the leader's revision, and joins", async () => {
    const first = stalledWatch([1, 2, 5]);
    const second = stalledWatch([1, 2, 5, 7, 8]);
    const watches = [first, second];
    const seen: number[] = [];
    const lines: string[] = [];
    let attempt = 0;
    const { watch } = await watchFromCurrent({
      upTo: 8,
      open: () => Promise.resolve(watches[attempt++] ?? stalledWatch([])),
      onEntry: (e) => seen.push(e.revision),
      what: "bucket outline-cluster",
      log: (line) => lines.push(line),
      // The first watch's time runs out once it has said what it had; the second's never does.
      sleep: () => (attempt === 1 ? Promise.resolve() : new Promise<void>(() => {})),
    });
    expect(watch).toBe(second);
    expect(first.stopped).toBe(true);
    expect(second.stopped).toBe(false);
    expect(attempt).toBe(2);
    expect(seen.slice(-5)).toEqual([1, 2, 5, 7, 8]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^the watch of bucket outline-cluster reached revision \d of 8 in 10000 ms \(attempt 1\); its consumer may sit on a replica behind the stream's leader: watching again$/,
    );
  });

  it("gives up in bounded time, naming the revisions, rather than hang", async () => {
    let t = 0;
    let opened = 0;
    const lines: string[] = [];
    const err = await watchFromCurrent({
      upTo: 8,
      open: () => {
        opened += 1;
        return Promise.resolve(stalledWatch([1, 3]));
      },
      onEntry: () => {},
      what: "bucket outline-cluster",
      log: (line) => lines.push(line),
      attemptMs: 10_000,
      giveUpMs: 60_000,
      now: () => t,
      sleep: (ms) => {
        t += ms;
        return Promise.resolve();
      },
    }).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(
      /^the watch of bucket outline-cluster never delivered its current values \(up to revision 8, the stream's last at start\) in 6 watches over 60\.0 s/,
    );
    expect(opened).toBe(6);
    expect(lines).toHaveLength(5);
  });

  it("takes an empty bucket as current at once", async () => {
    const only = stalledWatch([]);
    const { watch } = await watchFromCurrent({
      upTo: 0,
      open: () => Promise.resolve(only),
      onEntry: () => {},
      what: "bucket outline-cluster",
      log: () => {},
      sleep: () => new Promise<void>(() => {}),
    });
    expect(watch).toBe(only);
  });
});
