import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { utf8Bytes } from "../shared/bytes.ts";
import type { Message } from "../shared/events.ts";
import type { LeafJob, MergeJob } from "../shared/jobs.ts";
import {
  ExtractiveSummarizer,
  extractLeaf,
  extractMerge,
} from "../services/summarizer/extractive.ts";
import { termsOf } from "../services/summarizer/extract/units.ts";

const LINE = 512;

function message(text: string, over: Partial<Message> = {}): Message {
  return {
    id: "m1",
    thread: "t1",
    at: "2026-11-30T08:15:00Z",
    from: "Ana",
    to: "Bo",
    role: "user",
    text,
    ...over,
  };
}

const filler =
  "We talked about this at length and there are several considerations worth weighing carefully before anyone commits to a direction. ";

// Facts planted in different paragraphs, each behind filler a truncation would never reach.
const leftText = [
  `Bo, please roll billing back to commit 9f3c2ab before Friday. ${filler.repeat(3)}`,
  `The invoice run INV-20931 for Acme Corp failed twice. ${filler.repeat(3)}`,
  `Zephyrine Okafor owns services/billing/limits.ts and said the cap is 2,500 requests. ${filler.repeat(3)}`,
  `It started on 2026-11-28 and cost us $4,250.75 so far. ${filler.repeat(2)}`,
].join("\n\n");
const leftFacts = [
  "Ana → Bo:",
  "9f3c2ab",
  "INV-20931",
  "Acme Corp",
  "Zephyrine Okafor",
  "services/billing/limits.ts",
  "2,500",
  "2026-11-28",
  "$4,250.75",
];

const rightText = [
  `Rolled back to 9f3c2ab at 10:40 and re-ran the invoices. ${filler.repeat(3)}`,
  `The re-run of INV-20931 succeeded but INV-20977 is still stuck. ${filler.repeat(3)}`,
  `Ticket BILL-4821 tracks the limits fix; see https://grafana.example.com/d/billing for p99 840ms. ${filler.repeat(2)}`,
].join("\n\n");
const rightFacts = [
  "Bo → Ana:",
  "INV-20977",
  "BILL-4821",
  "https://grafana.example.com/d/billing",
  "840ms",
];

describe("extractive leaf", () => {
  it("keeps who said it and every planted name, number, id, date and path", () => {
    const cases = [
      { line: extractLeaf(message(leftText), LINE), facts: leftFacts },
      { line: extractLeaf(message(rightText, { from: "Bo", to: "Ana" }), LINE), facts: rightFacts },
    ];
    for (const { line, facts } of cases) {
      expect(utf8Bytes(line)).toBeLessThanOrEqual(LINE);
      for (const fact of facts) expect(line).toContain(fact);
    }
    expect(cases[0]?.line.startsWith("Ana → Bo: ")).toBe(true);
    expect(cases[1]?.line.startsWith("Bo → Ana: ")).toBe(true);
  });

  it("keeps the first sentence of each idea, not just the start of the message", () => {
    const line = extractLeaf(message(leftText), LINE);
    expect(line).toContain("please roll billing back to commit 9f3c2ab before Friday.");
    expect(line).toContain("The invoice run INV-20931 for Acme Corp failed twice.");
    expect(line).not.toContain(filler.repeat(2).trim());
  });

  it("keeps a short message whole and names its tool steps", () => {
    const steps = [
      { type: "function", function: { name: "bash", arguments: '{"cmd":"npm test"}' } },
      { tool: "read_file", args: { path: "shared/bytes.ts" } },
    ];
    const line = extractLeaf(message("Ran the tests.", { role: "assistant", steps }), LINE);
    expect(line).toMatch(
      /^Ana → Bo: Ran the tests\. \[2 steps: bash\(.*npm test.*\), read_file\(.*shared\/bytes\.ts.*\)\]$/,
    );
  });

  it("makes a message of tool calls alone into a line of its steps", () => {
    const steps = Array.from({ length: 30 }, (_, i) => ({
      tool: "grep",
      args: { pattern: `needle_${i}` },
    }));
    const line = extractLeaf(message("", { steps }), 200);
    expect(utf8Bytes(line)).toBeLessThanOrEqual(200);
    expect(line).toMatch(/^Ana → Bo: grep\(.*needle_0/);
  });
});

describe("extractive merge", () => {
  const left = { id: 12, n: 1, text: extractLeaf(message(leftText), LINE) };
  const right = {
    id: 13,
    n: 1,
    text: extractLeaf(message(rightText, { from: "Bo", to: "Ana" }), LINE),
  };

  it("merges two lines into one that keeps both speakers and the planted facts", () => {
    const merged = extractMerge(left, right, LINE);
    expect(utf8Bytes(merged)).toBeLessThanOrEqual(LINE);
    // A merged line names each speaker before their words (not whom they spoke to).
    expect(merged.startsWith("Ana: ")).toBe(true);
    expect(merged).toContain(" / Bo: ");
    expect(merged.indexOf("Ana:")).toBeLessThan(merged.indexOf("Bo:"));
    for (const fact of [
      "9f3c2ab",
      "INV-20931",
      "Zephyrine Okafor",
      "2026-11-28",
      "INV-20977",
      "BILL-4821",
    ]) {
      expect(merged).toContain(fact);
    }
  });

  it("keeps the ids through a second level of merges", () => {
    const l1 = extractMerge(left, right, LINE);
    const other = extractMerge(
      { id: 14, n: 1, text: "Cy: asked whether invoice INV-31337 is affected too." },
      { id: 15, n: 1, text: `Bo: ${"not affected; it ran before the cap. ".repeat(12)}` },
      LINE,
    );
    const l2 = extractMerge({ id: 12, n: 2, text: l1 }, { id: 14, n: 2, text: other }, LINE);
    expect(utf8Bytes(l2)).toBeLessThanOrEqual(LINE);
    for (const fact of ["Ana:", "Cy:", "9f3c2ab", "INV-20931", "INV-31337", "BILL-4821"]) {
      expect(l2).toContain(fact);
    }
  });

  it("runs through the Summarizer interface with no model call", async () => {
    const job: MergeJob = {
      kind: "merge",
      thread: "t1",
      level: 1,
      index: 6,
      name: "12+2",
      line: LINE,
      context: [],
      left,
      right,
      first: 12,
      last: 13,
    };
    const result = await new ExtractiveSummarizer().summarize(job);
    expect(result).toEqual({ text: extractMerge(left, right, LINE), calls: 0 });
  });
});

// Text a chat really carries: words, numbers, ids, paths, emoji, CJK, accents, markdown, newlines.
const piece = fc.oneof(
  fc.constantFrom("the", "deploy", "failed", "because", "Ana", "Acme Corp", "INV-2093", "9f3c2ab"),
  fc.constantFrom("src/a.ts", "https://x.io/a?b=1", "2026-11-28", "$4.50", "42%", "10:40"),
  fc.constantFrom(
    "🎉",
    "👩‍💻",
    "测试",
    "日本語の文。",
    "é",
    "ß",
    "\n",
    "\n\n",
    "- ",
    "# ",
    "```",
    "`x`",
  ),
  fc.constantFrom(". ", "! ", "? ", ", ", "; ", ": ", " / ", "(", ")", " → ", "(also: a, b)"),
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 6 }),
);
const chatText = fc.array(piece, { maxLength: 400 }).map((parts) => parts.join(" "));
const author = fc.oneof(
  fc.constantFrom("Ana", "Bo", "李雷", "🤖 bot"),
  fc.string({ minLength: 1, maxLength: 300 }),
);

describe("extractive bounds", () => {
  it("never exceeds the limit, for a leaf or a merge, on any text", () => {
    fc.assert(
      fc.property(
        chatText,
        chatText,
        author,
        fc.option(author, { nil: undefined }),
        fc.integer({ min: 16, max: 1024 }),
        (a, b, from, to, line) => {
          const leafLine = extractLeaf(message(a, { from, to }), line);
          expect(utf8Bytes(leafLine)).toBeLessThanOrEqual(line);
          expect(Buffer.from(leafLine, "utf8").toString("utf8")).toBe(leafLine);
          const merged = extractMerge(
            { id: 0, n: 1, text: leafLine },
            { id: 1, n: 1, text: b },
            line,
          );
          expect(utf8Bytes(merged)).toBeLessThanOrEqual(line);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives the same output for the same input", () => {
    fc.assert(
      fc.property(chatText, chatText, fc.integer({ min: 16, max: 1024 }), (a, b, line) => {
        const job: LeafJob = {
          kind: "leaf",
          seq: 0,
          thread: "t1",
          level: 0,
          index: 3,
          name: "3+1",
          line,
          context: [],
          message: { ...message(a), position: 3 },
        };
        const one = extractLeaf(job.message, line);
        expect(extractLeaf(structuredClone(job.message), line)).toBe(one);
        const merged = extractMerge({ id: 0, n: 1, text: a }, { id: 1, n: 1, text: b }, line);
        expect(extractMerge({ id: 0, n: 1, text: a }, { id: 1, n: 1, text: b }, line)).toBe(merged);
      }),
      { numRuns: 100 },
    );
  });
});

describe("termsOf on ASCII text (its character scan)", () => {
  it("gives the terms the Unicode word pattern gives", () => {
    // A non-ASCII word too short to be a term sends the same text down the pattern's path.
    const ascii = fc
      .array(
        fc.constantFrom(
          ..."abcXYZ09'-s .,;:!?\n#$%/@_",
          "Ana's",
          "INV-2093",
          "v2",
          "Tuesday",
          "deploy",
        ),
      )
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(ascii, (text) => {
        expect(termsOf(text)).toEqual(termsOf(`${text} é`));
      }),
      { numRuns: 500 },
    );
  });
});
