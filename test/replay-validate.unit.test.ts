import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { messageCreatedSchema } from "../shared/events.ts";
import { summaryEventSchema } from "../shared/history.ts";
import { parseMessage, parseSummary } from "../shared/validate.ts";

const runs = Number(process.env.PROPERTY_RUNS ?? 40) * 25;

/** The replay's check must answer as the schema does: same verdict, same value, same key order. */
function sameAsSchema(
  parse: (body: unknown) => unknown,
  schema: { safeParse(body: unknown): { success: boolean; data?: unknown } },
  body: unknown,
): void {
  const ours = parse(body);
  const theirs = schema.safeParse(body);
  expect(ours === undefined).toBe(!theirs.success);
  if (theirs.success) expect(JSON.stringify(ours)).toBe(JSON.stringify(theirs.data));
}

/** A value that is right for the field most of the time, and anything else now and then. */
const mostly = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 6, arbitrary: good }, { weight: 1, arbitrary: fc.jsonValue() });

const times = fc.oneof(
  fc
    .date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z") })
    .filter((d) => !Number.isNaN(d.getTime()))
    .map((d) => d.toISOString()),
  fc.constantFrom(
    "2026-11-30T08:15:00Z",
    "2026-11-30T08:15:00+02:00",
    "2026-02-30T00:00:00.000Z",
    "2024-02-29T00:00:00.000Z",
    "2026-11-30T24:00:00.000Z",
    "2026-11-30 08:15:00Z",
    "2026-11-30T08:15:00.000",
    "2000-02-29T00:00:00.000Z",
    "2100-02-29T00:00:00.000Z",
    "0000-02-29T00:00:00.000Z",
    "2026-04-31T00:00:00.000Z",
    "2026-13-01T00:00:00.000Z",
    "2026-00-10T00:00:00.000Z",
    "2026-01-00T00:00:00.000Z",
    "2026-01-01T23:59:60.000Z",
    "2026-01-01T23:60:00.000Z",
    "2026-01-01T23:59:59.99xZ",
    "2026-01-01T23:59:59.999z",
    "+02026-01-01T00:00:00.00Z",
    "",
  ),
);

const strings = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: "grapheme", maxLength: 300 }),
  fc.constantFrom("", "a".repeat(256), "a".repeat(257), "😀".repeat(200)),
);

/** Bodies as JSON gives them: optional keys absent or present, an unknown key now and then. */
function body(fields: Record<string, fc.Arbitrary<unknown>>, optional: readonly string[]) {
  const all: Record<string, fc.Arbitrary<unknown>> = { ...fields, extra: fc.jsonValue() };
  const requiredKeys = Object.keys(fields).filter((k) => !optional.includes(k));
  return fc.record(all, { requiredKeys }).chain((b) =>
    fc.boolean().map((keepExtra) => {
      const out: Record<string, unknown> = { ...b };
      if (!keepExtra) delete out.extra;
      return JSON.parse(JSON.stringify(out)) as unknown;
    }),
  );
}

describe("replay validation", () => {
  it("message.created: the same verdict and value as messageCreatedSchema", () => {
    const arb = body(
      {
        id: mostly(strings),
        thread: mostly(fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/), strings)),
        at: mostly(times),
        from: mostly(strings),
        to: mostly(strings),
        role: mostly(fc.constantFrom("user", "assistant", "tool", "system", "bot")),
        text: mostly(strings),
        state: fc.jsonValue(),
        steps: mostly(fc.array(fc.jsonValue(), { maxLength: 3 })),
      },
      ["to", "state", "steps"],
    );
    fc.assert(
      fc.property(arb, (b) => sameAsSchema(parseMessage, messageCreatedSchema, b)),
      { numRuns: runs },
    );
  });

  it("HISTORY node: the same verdict and value as summaryEventSchema", () => {
    const number = fc.oneof(fc.nat(), fc.integer(), fc.double(), fc.constant(2 ** 60));
    const arb = body(
      {
        thread: mostly(fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/)),
        level: mostly(number),
        index: mostly(number),
        text: mostly(strings),
        until: mostly(times),
        by: mostly(fc.constantFrom("free", "extractive", "openai/x")),
        message: mostly(
          fc.record(
            { id: mostly(strings), seq: mostly(number), extra: fc.nat() },
            { requiredKeys: [] },
          ),
        ),
      },
      ["message"],
    );
    fc.assert(
      fc.property(arb, (b) => sameAsSchema(parseSummary, summaryEventSchema, b)),
      { numRuns: runs },
    );
  });

  it("the bench's and the worker's usual bodies take the direct path (no schema call)", () => {
    const schemaCalls = [
      vi.spyOn(messageCreatedSchema, "safeParse"),
      vi.spyOn(summaryEventSchema, "safeParse"),
    ];
    const message = {
      id: "t1-m0",
      thread: "t1",
      at: "2026-01-01T00:00:00.000Z",
      from: "Ana",
      role: "user",
      text: "hello",
    };
    expect(parseMessage(message)).toEqual(message);
    const node = { thread: "t1", level: 0, index: 3, text: "x", until: "", by: "free" };
    expect(parseSummary({ ...node, message: { id: "m", seq: 4 } })).toEqual({
      ...node,
      message: { id: "m", seq: 4 },
    });
    for (const spy of schemaCalls) {
      expect(spy).not.toHaveBeenCalled();
      spy.mockRestore();
    }
  });
});
