import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ZoomError } from "../shared/errors.ts";
import type { Message } from "../shared/events.ts";
import { type NodeRef } from "../shared/names.ts";
import {
  OUTLINE_HEADER,
  buildAnthropicPrompt,
  buildOpenAIPrompt,
  type AnthropicTextBlock,
  type PromptLine,
} from "../shared/prompt.ts";
import { pageText, resolveZoom, ZOOM_PAGE } from "../shared/zoom.ts";
import { ZOOM_TOOL } from "../services/api/tools.ts";

const ref = (id: number, n: number): NodeRef => ({ level: Math.log2(n), index: id / n });
// Outline 0+8 8+4 12+1, boundary 13, 20 messages in all.
const scope = { outline: [ref(0, 8), ref(8, 4), ref(12, 1)], boundary: 13, count: 20 };

function zoomError(args: Parameters<typeof resolveZoom>[1], over = scope): ZoomError {
  try {
    resolveZoom(over, args);
  } catch (e) {
    if (e instanceof ZoomError) return e;
    throw e;
  }
  throw new Error("expected a ZoomError");
}

describe("zoom resolution", () => {
  it("opens a line into its two halves, and halves of halves", () => {
    expect(resolveZoom(scope, { id: 0, n: 8 })).toEqual({
      kind: "lines",
      nodes: [ref(0, 4), ref(4, 4)],
    });
    expect(resolveZoom(scope, { id: 4, n: 4 })).toEqual({
      kind: "lines",
      nodes: [ref(4, 2), ref(6, 2)],
    });
    expect(resolveZoom(scope, { id: 8, n: 4 })).toEqual({
      kind: "lines",
      nodes: [ref(8, 2), ref(10, 2)],
    });
  });

  it("zoom(id, 1) reads a message, in the outline or in the tail", () => {
    expect(resolveZoom(scope, { id: 3, n: 1 })).toEqual({
      kind: "message",
      position: 3,
      offset: 0,
      limit: ZOOM_PAGE,
    });
    expect(resolveZoom(scope, { id: 19, n: 1 })).toMatchObject({ kind: "message", position: 19 });
  });

  it("names the rule broken: n=3, id not a multiple of n, id past the end", () => {
    expect(zoomError({ id: 0, n: 3 }).code).toBe("N_NOT_POWER_OF_TWO");
    expect(zoomError({ id: 0, n: 3 }).message).toMatch(/power of two/);
    const notMultiple = zoomError({ id: 6, n: 4 });
    expect(notMultiple.code).toBe("ID_NOT_MULTIPLE_OF_N");
    expect(notMultiple.message).toMatch(/6 is not a multiple of 4.*id=4/);
    expect(zoomError({ id: 20, n: 1 }).code).toBe("ID_PAST_END");
    expect(zoomError({ id: 16, n: 2 }).code).toBe("ID_PAST_OUTLINE");
    expect(zoomError({ id: 16, n: 2 }).message).toContain("covers messages 0 to 12");
    // A thread never cut has no outline: said so, not as "messages 0 to -1".
    const uncut = zoomError({ id: 0, n: 2 }, { outline: [], boundary: 0, count: 3 });
    expect(uncut.code).toBe("ID_PAST_OUTLINE");
    expect(uncut.message).toContain("the outline, which is empty (the thread was never cut)");
    expect(zoomError({ id: 0, n: 16 }).code).toBe("NO_SUCH_LINE");
    expect(zoomError({ id: -1, n: 1 }).code).toBe("BAD_ID");
    expect(zoomError({ id: 0, n: 2, offset: 5 }).code).toBe("PAGE_ON_LINE");
    expect(zoomError({ id: 1, n: 1, limit: 0 }).code).toBe("BAD_PAGE");
  });

  it("a 90,000-character message comes in pages with where the next starts", () => {
    const text = "a".repeat(89_999) + "😀"; // 90,001 UTF-16 units, an emoji at the very end
    const first = pageText(text, 0, ZOOM_PAGE, false);
    expect(first.text.length).toBe(25_000);
    expect(first.page).toEqual({ offset: 0, limit: 25_000, total: 90_001, next: 25_000 });
    expect(first.note).toBe("[showing characters 0-25000 of 90001; next page: offset 25000]");
    const pages = [first];
    while (pages.at(-1)?.page.next != null) {
      pages.push(pageText(text, pages.at(-1)?.page.next ?? 0, ZOOM_PAGE, true));
    }
    expect(pages).toHaveLength(4);
    expect(pages.map((p) => p.text).join("")).toBe(text);
    expect(pages.at(-1)?.note).toMatch(/last page/);
    // A page never splits a surrogate pair.
    const split = pageText("ab😀cd", 0, 3, true);
    expect(split.text).toBe("ab");
    expect(split.page.next).toBe(2);
  });

  it("the zoom tool tells agents the unit pages count in: UTF-16 code units", () => {
    // An emoji is 2 units: 4 emoji and "x" are 9, and offset 8 is the "x".
    const text = "😀😀😀😀x";
    expect(pageText(text, 0, ZOOM_PAGE, true).page.total).toBe(9);
    expect(pageText(text, 8, ZOOM_PAGE, true).text).toBe("x");
    const { description, parameters } = ZOOM_TOOL.function;
    const page = parameters.properties as Record<string, { description: string } | undefined>;
    for (const said of [description, page.offset?.description, page.limit?.description]) {
      expect(said).toMatch(/UTF-16 code units/);
      expect(said).not.toMatch(/character/);
    }
  });

  it("no page holds half a character, and pages by next give the message back", () => {
    // An offset inside a pair starts the page at the pair; limit 1 on one gives it whole.
    const inside = pageText("🎉🎉", 1, ZOOM_PAGE, true);
    expect(inside.text).toBe("🎉🎉");
    expect(inside.page.offset).toBe(0);
    expect(pageText("a🎉b", 1, 1, true)).toMatchObject({ text: "🎉", page: { next: 3 } });

    const char = fc.oneof(
      fc.constantFrom("a", " ", "é", "\n", "中"),
      fc.integer({ min: 0x10000, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
    );
    const textArb = fc.array(char, { maxLength: 40 }).map((cs) => cs.join(""));
    const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    fc.assert(
      fc.property(textArb, fc.nat(), fc.integer({ min: 1, max: 9 }), (text, at, limit) => {
        const page = pageText(text, at % (text.length + 1), limit, true);
        expect(page.text).not.toMatch(lone);
        expect(text.slice(page.page.offset).startsWith(page.text)).toBe(true);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(textArb, fc.integer({ min: 1, max: 9 }), (text, limit) => {
        const pages: string[] = [];
        let next: number | null = 0;
        while (next !== null) {
          if (pages.length > text.length) throw new Error(`no progress at offset ${next}`);
          const page = pageText(text, next, limit, true);
          expect(page.text).not.toMatch(lone);
          pages.push(page.text);
          next = page.page.next;
        }
        expect(pages.join("")).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it("paging a short message says it fits in one zoom", () => {
    expect(pageText("short", 0, ZOOM_PAGE, true).note).toMatch(/fits in one zoom/);
    expect(() => pageText("short", 9, ZOOM_PAGE, true)).toThrow(/past the end/);
  });
});

const msg = (i: number, from: string, extra: Partial<Message> = {}): Message => ({
  id: `p${i}`,
  thread: "t",
  at: `2026-03-0${1 + (i % 9)}T10:00:00Z`,
  from,
  role: "user",
  text: `text ${i}\nsecond line`,
  ...extra,
});

const lines: PromptLine[] = Array.from({ length: 10 }, (_, k) => ({
  id: k,
  n: 1,
  text: `line ${k}\nwrapped`,
  until: `2026-02-${String(10 + k).padStart(2, "0")}T00:00:00Z`,
}));

describe("prompt", () => {
  it("a thread never cut gets every message whole: the agent's as assistant, others as user with the author", () => {
    const p = buildOpenAIPrompt({
      agent: "north",
      lines: [],
      cutAt: null,
      tail: [msg(1, "Ana"), msg(2, "north")],
    });
    expect(p.messages).toEqual([
      { role: "user", content: "Ana: text 1\nsecond line" },
      { role: "assistant", content: "text 2\nsecond line" },
    ]);
    expect(p.stats.lines).toBe(0);
  });

  it("lays out the header, <chat>, the lines folded, </chat>, then the tail whole", () => {
    const p = buildOpenAIPrompt({
      agent: "north",
      lines,
      cutAt: "2026-03-01T10:00:00Z",
      tail: [msg(3, "Ana")],
    });
    const first = p.messages[0];
    expect(first?.role).toBe("user");
    const content = first?.content ?? "";
    expect(
      content.startsWith(`${OUTLINE_HEADER}\n<chat>\n0+1|line 0 wrapped\n1+1|line 1 wrapped\n`),
    ).toBe(true);
    expect(content.endsWith("9+1|line 9 wrapped\n</chat>")).toBe(true);
    expect(OUTLINE_HEADER).toMatch(/oldest first/);
    expect(OUTLINE_HEADER).toMatch(/zoom\(id, n\)/);
    expect(OUTLINE_HEADER).toMatch(/zoom\(id, 1\)/);
    expect(p.messages[1]).toEqual({ role: "user", content: "Ana: text 3\nsecond line" });
    expect(p.stats).toMatchObject({ lines: 10 });
    expect(p.stats.outlineBytes).toBe(
      lines.reduce((n, l) => n + `${l.id}+1|${l.text.replace("\n", " ")}\n`.length, 0),
    );
  });

  it("the `from` window leaves out lines and messages older than it", () => {
    const p = buildOpenAIPrompt({
      agent: "north",
      from: "2026-02-15T00:00:00Z",
      lines,
      cutAt: "2026-03-01T10:00:00Z",
      tail: [msg(3, "Ana")],
    });
    expect(p.stats.lines).toBe(5);
    expect(p.messages[0]?.content).toContain("\n<chat>\n5+1|");
    const none = buildOpenAIPrompt({
      agent: "north",
      from: "2027-01-01T00:00:00Z",
      lines,
      cutAt: null,
      tail: [msg(3, "Ana")],
    });
    expect(none.messages).toEqual([]);
  });

  it("sends the agent's model state back only when written after cutAt", () => {
    const before = msg(2, "north", { at: "2026-03-01T09:00:00Z", state: { thought: "old" } });
    const after = msg(4, "north", { at: "2026-03-01T11:00:00Z", state: { thought: "new" } });
    const p = buildOpenAIPrompt({
      agent: "north",
      lines,
      cutAt: "2026-03-01T10:00:00Z",
      tail: [before, after],
    });
    expect(p.messages[1]).not.toHaveProperty("state");
    expect(p.messages[2]).toMatchObject({ role: "assistant", state: { thought: "new" } });
  });

  it("keeps back model state written at the very instant of the cut (cutAt is the newest message cut, so it came before the new start)", () => {
    const cutAt = "2026-03-01T10:00:00Z";
    const at = msg(3, "north", { at: cutAt, state: { thought: "at the cut" } });
    // The same instant written another way: compared as times, not strings.
    const sameInstant = msg(4, "north", {
      at: "2026-03-01T11:00:00.000+01:00",
      state: { thought: "same instant" },
    });
    const justAfter = msg(5, "north", {
      at: "2026-03-01T10:00:00.001Z",
      state: { thought: "after" },
    });
    const p = buildOpenAIPrompt({
      agent: "north",
      lines,
      cutAt,
      tail: [at, sameInstant, justAfter],
    });
    expect(p.messages[1]).toEqual({ role: "assistant", content: at.text });
    expect(p.messages[2]).toEqual({ role: "assistant", content: sameInstant.text });
    expect(p.messages[3]).toMatchObject({ role: "assistant", state: { thought: "after" } });
  });

  it("Anthropic format: 4-line blocks, marks on the last whole block and 20 and 40 blocks before it", () => {
    const many: PromptLine[] = Array.from({ length: 4 * 50 + 2 }, (_, k) => ({
      id: k,
      n: 1,
      text: `l${k}`,
      until: "2026-01-01T00:00:00Z",
    }));
    const input = { agent: "north", lines: many, cutAt: null, tail: [msg(1, "Ana")] };
    const p = buildAnthropicPrompt(input);
    const blocks = p.messages[0]?.content as AnthropicTextBlock[];
    // header, 51 line blocks (50 whole + 1 partial), closing tag
    expect(blocks).toHaveLength(53);
    const marked = blocks.flatMap((b, i) => (b.cache_control ? [i] : []));
    expect(marked).toEqual([10, 30, 50]);
    expect(blocks[50]?.text.split("\n").filter(Boolean)).toHaveLength(4);
    // The blocks joined are exactly the OpenAI outline message.
    expect(blocks.map((b) => b.text).join("")).toBe(buildOpenAIPrompt(input).messages[0]?.content);
  });
});

describe("prompt under a summarizer outage", () => {
  it("past the hard cap the oldest whole messages are left out and the prompt says they are pending", () => {
    const tail = Array.from({ length: 10 }, (_, i) => msg(i, "Ana", { text: "x".repeat(400) }));
    const uncapped = buildOpenAIPrompt({
      agent: "north",
      lines,
      cutAt: null,
      tail,
      firstPosition: 50,
    });
    expect(uncapped.stats.pending).toBe(0);
    const capped = buildOpenAIPrompt({
      agent: "north",
      lines,
      cutAt: null,
      tail,
      tailCap: 450,
      firstPosition: 50,
    });
    expect(capped.stats.tailTokens).toBeLessThanOrEqual(450);
    expect(capped.stats.pending).toBe(6);
    expect(capped.messages[1]?.content).toBe(
      "[messages 50 to 55 are waiting to be summarized and not shown here; zoom(id, 1) reads one whole]",
    );
    expect(capped.messages.slice(2).map((m) => m.content)).toEqual(
      uncapped.messages.slice(7).map((m) => m.content),
    );
    // The newest message always stays, however big.
    const one = buildOpenAIPrompt({
      agent: "north",
      lines: [],
      cutAt: null,
      tail: tail.slice(0, 2),
      tailCap: 1,
    });
    expect(one.stats.pending).toBe(1);
    expect(one.messages.at(-1)?.content).toBe(`Ana: ${"x".repeat(400)}`);
  });
});
