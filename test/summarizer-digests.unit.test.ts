import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { utf8Bytes } from "../shared/bytes.ts";
import type { Message } from "../shared/events.ts";
import type { LeafJob, MergeJob, SummaryJob } from "../shared/jobs.ts";
import { ExtractiveSummarizer, extractLeaf } from "../services/summarizer/extractive.ts";
import { DigestCache } from "../services/summarizer/digests.ts";
import { lineDigest } from "../services/summarizer/extract/digest.ts";
import { makeUnit } from "../services/summarizer/extract/units.ts";
import { leafWork, mergeWork, type ExtractResult } from "../services/summarizer/extract/work.ts";

function message(text: string, from = "Ana", to?: string): Message {
  return {
    id: "m",
    thread: "t",
    at: "2026-11-30T08:15:00Z",
    from,
    ...(to ? { to } : {}),
    role: "user",
    text,
  };
}

const leaf = (text: string, position: number, from = "Ana", line = 512): ExtractResult =>
  leafWork({ kind: "leaf", message: message(text, from), position, line });

/** Merges built results pairwise up a tree, with digests (as the summarizer holds them). */
function mergeUp(built: ExtractResult[], line: number): ExtractResult[][] {
  const levels = [built];
  for (let n = 1, level = built; level.length > 1; n *= 2) {
    const next: ExtractResult[] = [];
    for (let k = 0; k + 1 < level.length; k += 2) {
      const l = level[k] as ExtractResult;
      const r = level[k + 1] as ExtractResult;
      next.push(
        mergeWork({
          kind: "merge",
          left: { id: k * n, n, text: l.text },
          right: { id: (k + 1) * n, n, text: r.text },
          line,
          leftDigest: l.digest,
          rightDigest: r.digest,
        }),
      );
    }
    levels.push(next);
    level = next;
  }
  return levels;
}

// Chat without exact tokens: ordinary words, some rare, in sentences of any length.
const word = fc.constantFrom(
  "we",
  "talked",
  "about",
  "the",
  "garden",
  "and",
  "weather",
  "again",
  "honestly",
  "nothing",
  "happened",
  "today",
  "lunch",
  "was",
  "fine",
  "coffee",
  "meeting",
  "later",
  "maybe",
);
const sentence = fc
  .array(word, { minLength: 2, maxLength: 24 })
  .map((ws) => `${ws.join(" ").replace(/^./, (c) => c.toUpperCase())}.`);
const chatter = fc.array(sentence, { minLength: 1, maxLength: 30 }).map((ss) => ss.join(" "));

describe("extractive merges from their children's lines", () => {
  const facts = [
    leaf("We decided to move the offsite to Porto on June 14. Lunch was fine.", 0),
    leaf("Honestly nothing happened today. The garden needs water.", 1, "Bo"),
    leaf(
      "I talked to the landlord again. Can you send me the contract draft by Friday? Weather is grey.",
      2,
    ),
    leaf("Coffee later maybe. The ticket for the billing migration is BILL-4821.", 3, "Bo"),
  ];

  it("chooses from its children's lines: a held digest is the one read from the line", () => {
    const filler = "We talked about the garden and the weather again, at length. ".repeat(3);
    const a = leaf(`${filler}Final call: we go with Okta for SSO by the 21st.`, 0);
    const b = leaf(`${filler}${filler}Lunch was fine.`, 1, "Bo");
    expect(a.digest).toEqual(lineDigest(a.text, 0, 1));
    expect(a.digest.units.some((u) => u.text.includes("Okta"))).toBe(true);
    const [, [merged]] = mergeUp([a, b], 512) as [unknown, [ExtractResult]];
    expect(merged.text).toContain("Okta for SSO by the 21st");
    expect(merged.digest).toEqual(lineDigest(merged.text, 0, 2));
    const cold = mergeWork({
      kind: "merge",
      left: { id: 0, n: 1, text: a.text },
      right: { id: 1, n: 1, text: b.text },
      line: 512,
    });
    expect(cold).toEqual(merged);
  });

  it("keeps both halves, each speaker with their words, and no (also: …) list", () => {
    const [, , [top]] = mergeUp(facts, 512) as [unknown, unknown, [ExtractResult]];
    expect(top.text.startsWith("Ana: ")).toBe(true);
    expect(top.text).toContain(" / Bo: ");
    for (const key of ["Porto", "June 14", "contract draft", "BILL-4821"])
      expect(top.text).toContain(key);
    expect(top.text).not.toContain("(also:");
  });

  it("stays within the limit, at any level, on any chat and any limit", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(chatter, fc.constantFrom("Ana", "Bo", "李雷", "x".repeat(200))), {
          minLength: 2,
          maxLength: 9,
        }),
        fc.integer({ min: 16, max: 1024 }),
        (messages, line) => {
          const leaves = messages.map(([text, from], i) => leaf(text, i, from, line));
          for (const level of mergeUp(leaves, line))
            for (const node of level) {
              expect(utf8Bytes(node.text)).toBeLessThanOrEqual(line);
              expect(node.digest.line).toBe(node.text);
            }
        },
      ),
      { numRuns: 120 },
    );
  });

  it("gives the same lines and digests for the same inputs, cloned or not", () => {
    fc.assert(
      fc.property(fc.array(chatter, { minLength: 2, maxLength: 8 }), (texts) => {
        const once = mergeUp(
          texts.map((t, i) => leaf(t, i)),
          512,
        );
        const again = mergeUp(
          texts.map((t, i) => structuredClone(leaf(t, i))),
          512,
        );
        expect(again).toEqual(once);
      }),
      { numRuns: 60 },
    );
  });

  it("keeps a planted fact in its leaf, wherever the message says it", () => {
    fc.assert(
      fc.property(
        fc.array(sentence, { minLength: 0, maxLength: 60 }),
        fc.nat(),
        fc.integer({ min: 100, max: 99_999 }),
        (sentences, at, code) => {
          const fact = `The vault code for the archive is VX-${code}.`;
          const said = [...sentences];
          said.splice(at % (said.length + 1), 0, fact);
          const line = extractLeaf(message(said.join(" ")), 512);
          expect(line).toContain(`VX-${code}`);
          // And the leaf's digest is its line's, read back.
          expect(leaf(said.join(" "), 0).digest).toEqual(lineDigest(line, 0, 1));
        },
      ),
      { numRuns: 150 },
    );
  });

  it("weighs each clause of a line as makeUnit weighs it, a turn's opening too", () => {
    const turn = fc.tuple(
      fc.constantFrom("Ana", "Bo"),
      fc.array(
        fc.oneof(sentence, fc.constantFrom("Booked Porto for June 14.", "BILL-4821 failed.")),
        {
          minLength: 1,
          maxLength: 4,
        },
      ),
    );
    fc.assert(
      fc.property(fc.array(turn, { minLength: 1, maxLength: 5 }), (turns) => {
        const line = turns.map(([who, said]) => `${who}: ${said.join(" ")}`).join(" / ");
        for (const unit of lineDigest(line, 0, 8).units) {
          const { who, at, nth, text } = unit;
          expect(unit.score).toBe(makeUnit(who, at, nth, text).score);
          expect(unit.terms).toEqual(makeUnit(who, at, nth, text).terms);
        }
      }),
      { numRuns: 100 },
    );
  });

  it("reads a node's digest from its line: its turns and clauses", () => {
    const parent = lineDigest(
      "Ana → Bo: Booked Porto for June 14; the rest later. / Bo: Fine, Lisbon can wait.",
      0,
      2,
    );
    expect(parent.units.map((u) => [u.who, u.text])).toEqual([
      ["Ana", "Booked Porto for June 14"],
      ["Ana", "the rest later."],
      ["Bo", "Fine, Lisbon can wait."],
    ]);
  });
});

describe("the summarizer's digests", () => {
  const job = (over: Partial<LeafJob>): LeafJob => ({
    kind: "leaf",
    thread: "t",
    level: 0,
    index: 0,
    name: "0+1",
    line: 512,
    context: [],
    seq: 0,
    message: { ...message("x"), position: 0 },
    ...over,
  });
  const merge = (left: string, right: string, index = 0): MergeJob => ({
    kind: "merge",
    thread: "t",
    level: 1,
    index,
    name: `${index * 2}+2`,
    line: 512,
    context: [],
    left: { id: index * 2, n: 1, text: left },
    right: { id: index * 2 + 1, n: 1, text: right },
    first: index * 2,
    last: index * 2 + 1,
  });
  const long = (fact: string) =>
    `${"We talked about the garden and the weather again, at length. ".repeat(2)}${fact} ${"Lunch was fine, the coffee was fine, nothing happened today at all. ".repeat(10)}`;

  it("uses a child's digest only for the line it was made with", async () => {
    const summarizer = new ExtractiveSummarizer();
    const a = await summarizer.summarize(
      job({ message: { ...message(long("Final call: Okta for SSO by the 21st.")), position: 0 } }),
    );
    const b = await summarizer.summarize(
      job({ index: 1, message: { ...message(long("Nothing else."), "Bo"), position: 1 } }),
    );
    expect(summarizer.held().digests).toBe(2);
    // A thread deleted and made again: the same node names, other lines. The old digests are
    // not used (and are dropped), so nothing of the deleted thread reaches the new one.
    const other = await summarizer.summarize(merge("Cy: a new thread.", "Di: same node names."));
    expect(other.text).not.toContain("Okta");
    expect(summarizer.held().digests).toBe(1);
    const fresh = new ExtractiveSummarizer();
    await fresh.summarize(
      job({ message: { ...message(long("Final call: Okta for SSO by the 21st.")), position: 0 } }),
    );
    await fresh.summarize(
      job({ index: 1, message: { ...message(long("Nothing else."), "Bo"), position: 1 } }),
    );
    const warm = (await fresh.summarize(merge(a.text, b.text))).text;
    expect(warm).toContain("Okta for SSO");
    // Each node is merged once: its children's digests are let go.
    expect(fresh.held().digests).toBe(1);
    // And a summarizer that holds nothing (a restart) makes the same line.
    const cold = new ExtractiveSummarizer({ digestBytes: 0 });
    expect((await cold.summarize(merge(a.text, b.text))).text).toBe(warm);
    expect(cold.held().digests).toBe(0);
  });

  it("gives a digest back only for the line it was read from, and stays within its bytes", () => {
    const cache = new DigestCache(10_000);
    const a = leaf("Booked Porto for June 14.", 0);
    cache.put("t", 0, 0, a.digest);
    // Another line under the same name (a thread deleted and made again): not this digest.
    expect(cache.take("t", 0, 0, "Ana: Booked Lisbon.")).toBeUndefined();
    expect(cache.size).toBe(0);
    cache.put("t", 0, 0, a.digest);
    expect(cache.take("t", 0, 0, a.text)).toBe(a.digest);
    expect(cache.size).toBe(0);
    // A free parent (its children's lines joined) is read from its line: nothing held for it.
    expect(cache.take("t", 1, 0, `${a.text} / Bo: Fine.`)).toBeUndefined();
    for (let i = 0; i < 200; i++) cache.put("t", 0, i, leaf(long(`Fact ${i}.`), i).digest);
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    expect(cache.size).toBeGreaterThan(0);
    // The oldest went first.
    expect(cache.take("t", 0, 199, leaf(long("Fact 199."), 199).text)).toBeDefined();
    expect(cache.take("t", 0, 0, leaf(long("Fact 0."), 0).text)).toBeUndefined();
  });

  it("merges the same way through the Summarizer interface as through its parts", async () => {
    const jobs: SummaryJob[] = [
      job({ message: { ...message("Booked Porto for June 14."), position: 0 } }),
      job({ index: 1, message: { ...message("Train tickets are on me.", "Bo"), position: 1 } }),
    ];
    const summarizer = new ExtractiveSummarizer();
    const texts = [];
    for (const j of jobs) texts.push((await summarizer.summarize(j)).text);
    const viaParts = leaf("Booked Porto for June 14.", 0).text;
    expect(texts[0]).toBe(viaParts);
    const result = await summarizer.summarize(merge(texts[0] as string, texts[1] as string));
    expect(result.calls).toBe(0);
    expect(result.text).toBe("Ana: Booked Porto for June 14. / Bo: Train tickets are on me.");
  });
});
