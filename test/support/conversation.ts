import fc from "fast-check";
import type { Message } from "../../shared/events.ts";
import type { SummaryJob } from "../../shared/jobs.ts";
import type { CoreSettings } from "../../shared/settings.ts";

/** A deterministic 32-bit hash (FNV-1a) so fake summaries depend only on their inputs. */
export function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * A fake summarizer whose text is a pure function of the job's node and inputs, sized between 40
 * bytes and the accepted limit, so merges are neither all free nor all paid.
 */
export function fakeSummary(job: SummaryJob): string {
  const source = job.kind === "leaf" ? job.message.text : `${job.left.text}|${job.right.text}`;
  const h = hash(`${job.name}:${source}`);
  const size = 40 + (h % Math.max(1, Math.floor(job.line * 1.25) - 40));
  const head = `${job.name}#${h.toString(36)} `;
  return (head + "s".repeat(Math.max(0, size - head.length))).slice(0, size);
}

export function makeMessage(
  thread: string,
  i: number,
  text: string,
  extra: Partial<Message> = {},
): Message {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
  return {
    id: `${thread}-m${i}`,
    thread,
    at,
    from: i % 3 === 0 ? "north" : "Ana",
    role: "user",
    text,
    ...extra,
  };
}

const alphabet = "abcdefghij klmnop qrstuvwxyz.,\nAé中😀";

/** Texts from 1 byte to 50 KB, mostly short, sometimes huge; some with non-ASCII. */
export const textArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ minLength: 1, maxLength: 80 }) },
  { weight: 3, arbitrary: fc.integer({ min: 80, max: 2000 }).map((n) => "w".repeat(n)) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.constantFrom(...Array.from(alphabet)), { minLength: 100, maxLength: 3000 })
      .map((cs) => cs.join("")),
  },
  { weight: 1, arbitrary: fc.integer({ min: 2000, max: 50_000 }).map((n) => "x".repeat(n)) },
);

/** Bytes of 10 lines of the largest accepted size with their heads: room for 2^9 messages. */
export const roomy = (line: number): number => 10 * (Math.floor(line * 1.25) + 16);

export const settingsArb: fc.Arbitrary<CoreSettings> = fc
  .record({
    line: fc.constantFrom(64, 128, 512),
    tailLow: fc.integer({ min: 20, max: 600 }),
    tailSpan: fc.integer({ min: 0, max: 1500 }),
    outlineLow: fc.integer({ min: 0, max: 3000 }),
    outlineSpan: fc.integer({ min: 0, max: 4000 }),
    concurrency: fc.integer({ min: 1, max: 8 }),
    // Summarizer groups (HISTORY_GROUP): 1 is each node alone, at once.
    group: fc.constantFrom(1, 1, 2, 3, 8),
  })
  .map(({ line, tailLow, tailSpan, outlineLow, outlineSpan, concurrency, group }) => ({
    line,
    tail: [tailLow, tailLow + tailSpan] as [number, number],
    // Enough room for the lines that cannot merge (one per level: a binary counter of the
    // boundary), so the outline bound is reachable for conversations of this size.
    outline: [roomy(line) + outlineLow, roomy(line) + outlineLow + outlineSpan] as [number, number],
    concurrency,
    group,
  }));
