import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Logger } from "../services/thread-worker/log.ts";
import { RETRY_REPEAT_MS, RetryLog, type RetryEntry } from "../services/thread-worker/retry-log.ts";
import { retryInPlace, StoppedError } from "../services/thread-worker/retry.ts";

interface Line {
  level: "info" | "warn" | "error";
  message: string;
  fields: Record<string, unknown> | undefined;
  at: number;
}

function recorder() {
  const clock = { now: 0 };
  const lines: Line[] = [];
  const log: Logger = {
    info: (message, fields) => lines.push({ level: "info", message, fields, at: clock.now }),
    warn: (message, fields) => lines.push({ level: "warn", message, fields, at: clock.now }),
    error: (message, fields) => lines.push({ level: "error", message, fields, at: clock.now }),
  };
  const retries = new RetryLog(log, () => clock.now);
  return { clock, lines, retries };
}

const ELECTION = "JetStream system temporarily unavailable (503)";

describe("the retry log groups writes that fail the same way", () => {
  it("100 threads failing through an election: one line when it starts, one when all are stored", () => {
    const { clock, lines, retries } = recorder();
    const entries = Array.from({ length: 100 }, (_, i) =>
      retries.entry(`save actor state of thread 't${i}'`),
    );
    for (let attempt = 0; attempt < 5; attempt++) {
      for (const e of entries) e.failed(new Error(ELECTION), attempt, 100 * 2 ** attempt);
      clock.now += 100 * 2 ** attempt;
    }
    for (const e of entries) e.ended(true, 6);

    expect(lines.map((l) => l.level)).toEqual(["warn", "info"]);
    expect(lines[0]?.message).toMatch(
      /^save actor state of thread 't0' failed \(attempt 1\), retrying in 100 ms/,
    );
    expect(lines[0]?.fields).toEqual({ error: ELECTION });
    expect(lines[1]?.message).toBe(
      "recovered: 100 that failed this way succeeded, after 6 attempts at most, 3.1 s after the first failure",
    );
    expect(retries.failing).toBe(0);
  });

  it("texts that differ only in the thread, subject, key or numbers are one cause", () => {
    const { lines, retries } = recorder();
    retries
      .entry("a")
      .failed(
        new Error("JetStream did not answer a write to $KV.o_1-ids.n6.uaJVfG6x within 5000 ms"),
        0,
        100,
      );
    retries
      .entry("b")
      .failed(
        new Error("JetStream did not answer a write to history1.n14.0.3 within 5000 ms"),
        0,
        100,
      );
    retries.entry("c").failed(new Error("wrong last sequence: 12 (thread 'n6')"), 0, 100);
    retries.entry("d").failed(new Error("wrong last sequence: 907 (thread 'other')"), 0, 100);
    retries.entry("e").failed(new Error("503 no responders"), 0, 100);
    expect(lines.map((l) => l.fields?.["error"])).toEqual([
      "JetStream did not answer a write to $KV.o_1-ids.n6.uaJVfG6x within 5000 ms",
      "wrong last sequence: 12 (thread 'n6')",
      "503 no responders",
    ]);
    expect(retries.failing).toBe(3);
  });

  it("a cause still failing is told again every 30 s, with how many writes it holds", () => {
    const { clock, lines, retries } = recorder();
    const entries = [retries.entry("x"), retries.entry("y")];
    for (let t = 0; t <= 95_000; t += 5_000) {
      clock.now = t;
      for (const [i, e] of entries.entries())
        e.failed(new Error("insufficient resources"), t / 5_000 + i, 5_000);
    }
    expect(lines.map((l) => l.at)).toEqual([0, 30_000, 60_000, 90_000]);
    expect(lines[1]?.message).toMatch(
      /^2 still failing the same way after 30\.0 s, retrying; one: x/,
    );
    // A full store names the fix on every line.
    for (const l of lines) expect(l.fields?.["fix"]).toMatch(/max_file_store/);
  });

  it("writes that were abandoned say nothing more; the next failure opens the cause again", () => {
    const { clock, lines, retries } = recorder();
    const e = retries.entry("read node 0:1");
    e.failed(new Error(ELECTION), 0, 100);
    e.ended(false, 1);
    expect(retries.failing).toBe(0);
    clock.now = 1_000;
    retries.entry("read node 0:2").failed(new Error(ELECTION), 0, 100);
    expect(lines.map((l) => `${l.level} ${l.at}`)).toEqual(["warn 0", "warn 1000"]);
  });

  it("a write whose error changes leaves its first cause and joins the second", () => {
    const { lines, retries } = recorder();
    const [a, b] = [retries.entry("a"), retries.entry("b")];
    a.failed(new Error("no responders"), 0, 100);
    b.failed(new Error("no responders"), 0, 100);
    a.failed(new Error(ELECTION), 1, 200);
    b.ended(true, 2);
    a.ended(true, 3);
    expect(lines.map((l) => `${l.level} ${String(l.fields?.["error"])}`)).toEqual([
      "warn no responders",
      `warn ${ELECTION}`,
      "info no responders",
      `info ${ELECTION}`,
    ]);
  });

  it("property: every failure's cause is on the log, lines stay bounded, each recovery is told once", () => {
    const ERRORS = ["no responders", "timeout 5000 ms", "timeout 7 ms", "insufficient resources"];
    const key = (e: string) => e.replace(/\d+/g, "N");
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("fail" as const),
        write: fc.nat(5),
        error: fc.constantFrom(...ERRORS),
      }),
      fc.record({ kind: fc.constant("end" as const), write: fc.nat(5), stored: fc.boolean() }),
      fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 20_000 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const { clock, lines, retries } = recorder();
        const entries = new Map<number, { entry: RetryEntry; cause?: string; attempts: number }>();
        // The model: which writes fail with which cause, and when each cause's episode began.
        const episodes = new Map<string, { since: number; stored: number }>();
        let allowedWarns = 0;
        let recoveries = 0;
        const closeIfDone = (cause: string) => {
          if ([...entries.values()].some((w) => w.cause === cause)) return;
          const ep = episodes.get(cause);
          if (!ep) return;
          allowedWarns += 1 + Math.floor((clock.now - ep.since) / RETRY_REPEAT_MS);
          if (ep.stored > 0) recoveries++;
          episodes.delete(cause);
        };
        for (const o of ops) {
          if (o.kind === "wait") {
            clock.now += o.ms;
            continue;
          }
          const w = entries.get(o.write) ?? {
            entry: retries.entry(`write ${o.write}`),
            attempts: 0,
          };
          entries.set(o.write, w);
          if (o.kind === "fail") {
            const before = w.cause;
            w.cause = key(o.error);
            if (before !== undefined && before !== w.cause) closeIfDone(before);
            if (!episodes.has(w.cause)) episodes.set(w.cause, { since: clock.now, stored: 0 });
            w.entry.failed(new Error(o.error), w.attempts++, 100);
            // Nothing hidden: the cause has a warning since its episode began.
            const since = episodes.get(w.cause)?.since ?? 0;
            const told = lines.some(
              (l) =>
                l.level === "warn" && l.at >= since && key(String(l.fields?.["error"])) === w.cause,
            );
            if (!told) return false;
          } else {
            w.entry.ended(o.stored, w.attempts + 1);
            entries.delete(o.write);
            if (w.cause !== undefined) {
              const ep = episodes.get(w.cause);
              if (ep && o.stored) ep.stored++;
              closeIfDone(w.cause);
            }
          }
          if (retries.failing !== episodes.size) return false;
        }
        for (const cause of [...episodes.keys()]) {
          for (const w of entries.values())
            if (w.cause === cause) w.entry.ended(true, w.attempts + 1);
          for (const w of entries.values()) if (w.cause === cause) delete w.cause;
          const ep = episodes.get(cause);
          if (ep) ep.stored++;
          closeIfDone(cause);
        }
        const warns = lines.filter((l) => l.level === "warn").length;
        const infos = lines.filter((l) => l.level === "info").length;
        return warns <= allowedWarns && infos === recoveries && retries.failing === 0;
      }),
      { numRuns: 300 },
    );
  });
});

describe("retryInPlace tells the retry log", () => {
  const signal = new AbortController().signal;

  it("a write stored at once writes no line and keeps no entry", async () => {
    const { lines, retries } = recorder();
    await expect(
      retryInPlace(() => Promise.resolve(7), { what: "w", log: retries, signal }),
    ).resolves.toBe(7);
    expect(lines).toEqual([]);
  });

  it("a write stored on its third attempt: a warning, then the recovery", async () => {
    const { lines, retries } = recorder();
    let calls = 0;
    const value = await retryInPlace(
      () => (++calls < 3 ? Promise.reject(new Error(ELECTION)) : Promise.resolve("ok")),
      { what: "save actor state of thread 't'", log: retries, signal, baseMs: 1, capMs: 1 },
    );
    expect(value).toBe("ok");
    expect(lines.map((l) => l.level)).toEqual(["warn", "info"]);
    expect(lines[1]?.message).toMatch(
      /^recovered: 1 that failed this way succeeded, after 3 attempts at most/,
    );
    expect(retries.failing).toBe(0);
  });

  it("a loop stopped while failing leaves its cause without a recovery line", async () => {
    const { lines, retries } = recorder();
    const stop = new AbortController();
    const loop = retryInPlace(() => Promise.reject(new Error(ELECTION)), {
      what: "w",
      log: retries,
      signal: stop.signal,
      baseMs: 60_000,
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(retries.failing).toBe(1);
    stop.abort();
    await expect(loop).rejects.toBeInstanceOf(StoppedError);
    expect(retries.failing).toBe(0);
    expect(lines.map((l) => l.level)).toEqual(["warn"]);
  });

  it("a permanent error is thrown at once and leaves nothing behind", async () => {
    const { lines, retries } = recorder();
    let calls = 0;
    const loop = retryInPlace(
      () =>
        ++calls === 1 ? Promise.reject(new Error(ELECTION)) : Promise.reject(new Error("gone")),
      {
        what: "w",
        log: retries,
        signal,
        baseMs: 1,
        isPermanent: (e) => (e as Error).message === "gone",
      },
    );
    await expect(loop).rejects.toThrow("gone");
    expect(lines.map((l) => l.level)).toEqual(["warn"]);
    expect(retries.failing).toBe(0);
  });
});
