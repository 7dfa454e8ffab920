import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApiError, clientOver, type Answer } from "../services/client/client.ts";
import { retryAfterSeconds } from "../services/client/transport.ts";

const ok = (value: unknown): Answer => ({ status: 200, body: JSON.stringify(value) });
const failed = (status: number, code: string, retryAfter?: number): Answer => ({
  status,
  body: JSON.stringify({ error: { code, message: `${code} happened` } }),
  ...(retryAfter === undefined ? {} : { retryAfter }),
});

const answerArb = fc.oneof(
  fc.integer({ min: 0, max: 1000 }).map((n) => ok({ n })),
  fc
    .record({ code: fc.constantFrom("STATE_MISSING", "SNAPSHOT_BEHIND"), after: fc.nat(40) })
    .map(({ code, after }) => failed(503, code, after)),
  fc.constant(failed(503, "SEARCH_UNAVAILABLE")),
  fc.constant(failed(404, "THREAD_NOT_FOUND")),
  fc.constant(failed(400, "N_NOT_POWER_OF_TWO", 1)),
);

describe("the client's retries", () => {
  it("asks again only after a 503 with Retry-After, within the retries and the wait budget", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(answerArb, { minLength: 1, maxLength: 8 }),
        fc.nat(4),
        fc.integer({ min: 0, max: 60_000 }),
        async (answers, retries, maxWaitMs) => {
          let asked = 0;
          const slept: number[] = [];
          const client = clientOver(
            () => Promise.resolve(answers[Math.min(asked++, answers.length - 1)] as Answer),
            { retries, maxWaitMs, sleep: (ms) => Promise.resolve(void slept.push(ms)) },
          );
          const got = await client.outline({ thread: "t1" }).then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
          const seen = answers.slice(0, asked);
          expect(asked).toBeLessThanOrEqual(retries + 1);
          expect(slept.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(maxWaitMs);
          // Every answer but the last was a 503 saying when to ask again, and was waited for.
          for (const [i, a] of seen.slice(0, -1).entries()) {
            expect(a.status).toBe(503);
            expect(slept[i]).toBe((a.retryAfter as number) * 1000);
          }
          const last = seen.at(-1) as Answer;
          if ("value" in got) {
            expect(last.status).toBe(200);
            expect(got.value).toEqual(JSON.parse(last.body));
            return;
          }
          const err = got.error as ApiError;
          expect(err).toBeInstanceOf(ApiError);
          expect(err.status).toBe(last.status);
          expect(err.code).toBe((JSON.parse(last.body) as { error: { code: string } }).error.code);
          expect(err.retryAfter).toBe(last.retryAfter);
          // Thrown while it could have asked again: only past the retries or the budget.
          if (last.status === 503 && last.retryAfter !== undefined) {
            const spent = slept.reduce((a, b) => a + b, 0);
            expect(asked > retries || spent + last.retryAfter * 1000 > maxWaitMs).toBe(true);
          }
        },
      ),
    );
  });

  it("types an answer that is not the API's error body by its status", async () => {
    const client = clientOver(() => Promise.resolve({ status: 502, body: "<html>bad gateway" }));
    const err = await client.cluster().catch((e: unknown) => e as ApiError);
    expect(err).toMatchObject({ status: 502, code: "HTTP_502" });
    expect((err as ApiError).message).toContain("<html>bad gateway");
  });
});

describe("Retry-After", () => {
  it("reads seconds and HTTP dates, and nothing else", () => {
    const now = Date.parse("2026-12-07T10:00:00Z");
    expect(retryAfterSeconds("5", now)).toBe(5);
    expect(retryAfterSeconds("Mon, 07 Dec 2026 10:00:03 GMT", now)).toBe(3);
    expect(retryAfterSeconds("Mon, 07 Dec 2026 09:00:00 GMT", now)).toBe(0);
    expect(retryAfterSeconds("soon", now)).toBeUndefined();
    expect(retryAfterSeconds(null, now)).toBeUndefined();
  });
});
