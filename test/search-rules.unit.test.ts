import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SettingsError } from "../shared/errors.ts";
import { buildAnthropicPrompt, buildOpenAIPrompt, SEARCH_HEADER_LINE } from "../shared/prompt.ts";
import {
  denseGrams,
  findMatch,
  isToolEcho,
  lineHolding,
  normalizeText,
  planQuery,
  searchableText,
  snippet,
  SNIPPET_CHARS,
} from "../shared/search.ts";
import { parseSettings } from "../shared/settings.ts";
import { parseSearchConfig } from "../services/search/config.ts";
import { searchArgs } from "../services/search/search.ts";
import { makeMessage } from "./support/conversation.ts";

describe("what a search matches", () => {
  it("plans trigram for 3+ characters, grams for 1-2 dense ones, a scan for other short ones", () => {
    expect(planQuery("locker")).toEqual({ kind: "trigram", match: '"locker"' });
    // A phrase of ASCII words: its words of 3+ characters find the candidates first.
    expect(planQuery("Locker cod is 4711")).toEqual({
      kind: "trigram",
      match: '"Locker cod is 4711"',
      words: { match: '"Locker" AND "4711"', folded: "locker cod is 4711" },
    });
    expect(planQuery('say "hi"')).toEqual({
      kind: "trigram",
      match: '"say ""hi"""',
      words: { match: '"""hi"""', folded: 'say "hi"' },
    });
    // No word of 4 characters or more, or not ASCII: the phrase alone.
    expect(planQuery("and is a")).toEqual({ kind: "trigram", match: '"and is a"' });
    expect(planQuery("été ici")).toEqual({ kind: "trigram", match: '"été ici"' });
    expect(planQuery("会议")).toEqual({ kind: "grams", match: "b4f1ax8bae" });
    expect(planQuery("🎉")).toEqual({ kind: "grams", match: "u1f389" });
    expect(planQuery("OK")).toEqual({ kind: "scan", folded: "ok" });
    expect(planQuery("会a")).toEqual({ kind: "scan", folded: "会a" });
  });

  it("keeps dense characters and their pairs as gram tokens, nothing for Latin text", () => {
    expect(denseGrams("plain text only")).toBe("");
    expect(denseGrams("a会议b")).toBe("u4f1a u8bae b4f1ax8bae");
    // A pair never spans a non-dense character.
    expect(denseGrams("会 议")).toBe("u4f1a u8bae");
  });

  it("normalizes NFC and white space, so queries and texts meet", () => {
    expect(normalizeText("  e\u0301te\u0301\n\n  ici\t")).toBe("été ici");
  });

  it("finds a match ignoring case, also where folding changes a text's length", () => {
    expect(findMatch("The Locker Code", "locker cod")).toEqual([4, 14]);
    expect(findMatch("ΟΔΟΣ και", "οδοσ")).toEqual([0, 4]);
    // 'İ' lower-cases to two UTF-16 units: the match is mapped back onto the original.
    const text = "İstanbul gate B-12";
    const at = findMatch(text, "gate");
    expect(at && text.slice(at[0], at[1])).toBe("gate");
    expect(findMatch("abc", "zz")).toBeUndefined();
  });

  it("shows about 200 characters around the match, marked, with … where the text goes on", () => {
    const text = `${"a".repeat(300)} the locker code is 4711 ${"b".repeat(300)}`;
    const s = snippet(text, "LOCKER CODE");
    expect(s).toContain("«locker code»");
    expect(s.startsWith("…")).toBe(true);
    expect(s.endsWith("…")).toBe(true);
    expect(s.length).toBeLessThanOrEqual(SNIPPET_CHARS + 4);
    expect(snippet("short text here", "text")).toBe("short «text» here");
    fc.assert(
      fc.property(
        fc.string({ maxLength: 600 }),
        fc.string({ minLength: 1, maxLength: 30 }),
        (a, q) => {
          const text = normalizeText(`${a}${q}`);
          const query = normalizeText(q);
          if (query === "") return;
          const shown = snippet(text, query);
          expect(shown.length).toBeLessThanOrEqual(SNIPPET_CHARS + 4);
          expect(shown).toContain("«");
        },
      ),
    );
  });

  it("recognizes logged zoom and search results, and zoom or search steps", () => {
    const tool = (text: string) => ({ role: "tool" as const, text });
    expect(
      isToolEcho(tool(JSON.stringify({ lines: [{ id: 0, n: 4, text: "x", until: "t" }] }))),
    ).toBe(true);
    expect(
      isToolEcho(tool(JSON.stringify({ message: { id: "m", position: 3, text: "x" }, page: {} }))),
    ).toBe(true);
    expect(isToolEcho(tool(JSON.stringify({ hits: [], before: null })))).toBe(true);
    expect(isToolEcho(tool("0+4|Ana: lines\n4+4|more lines"))).toBe(true);
    // Not echoes: other tools' output, or the same text said by a person.
    expect(isToolEcho(tool(JSON.stringify({ rows: 3 })))).toBe(false);
    expect(isToolEcho(tool("grep: 3 matches"))).toBe(false);
    expect(isToolEcho({ role: "user", text: "0+4|Ana: lines" })).toBe(false);
    const m = makeMessage("t", 0, "see the notes", {
      steps: [
        { function: { name: "search", arguments: '{"q":"secret"}' } },
        { tool: "grep", args: { pattern: "TODO" }, output: "3 matches" },
      ],
    });
    expect(searchableText(m)).toBe("see the notes grep TODO 3 matches");
  });

  it("names the line holding a position, or null in the tail", () => {
    const lines = [
      { id: 0, n: 8 },
      { id: 8, n: 4 },
      { id: 12, n: 1 },
    ];
    expect(lineHolding(lines, 13, 0)).toBe("0+8");
    expect(lineHolding(lines, 13, 11)).toBe("8+4");
    expect(lineHolding(lines, 13, 12)).toBe("12+1");
    expect(lineHolding(lines, 13, 13)).toBeNull();
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 30 }), (levels) => {
        const tiled: { id: number; n: number }[] = [];
        let at = 0;
        for (const level of levels) {
          const n = 2 ** level;
          at = Math.ceil(at / n) * n;
          tiled.push({ id: at, n });
          at += n;
        }
        for (let p = 0; p < at; p++) {
          const linear = tiled.find((l) => l.id <= p && p < l.id + l.n);
          expect(lineHolding(tiled, at, p)).toBe(linear ? `${linear.id}+${linear.n}` : null);
        }
      }),
    );
  });
});

describe("search settings and arguments", () => {
  it("reads HISTORY_SEARCH as on or off (off by default)", () => {
    expect(parseSettings({}).search).toBe(false);
    expect(parseSettings({ HISTORY_SEARCH: "on" }).search).toBe(true);
    expect(parseSettings({ HISTORY_SEARCH: " OFF " }).search).toBe(false);
    expect(() => parseSettings({ HISTORY_SEARCH: "yes" })).toThrow(SettingsError);
    expect(() => parseSettings({ HISTORY_SEARCH: "yes" })).toThrow(/HISTORY_SEARCH/);
  });

  it("reads the index's file and cache", () => {
    expect(parseSearchConfig({}, "/srv")).toEqual({ path: "/srv/.data/search.db", cacheMiB: 32 });
    expect(
      parseSearchConfig({ OUTLINE_SEARCH_DB: "/x/i.db", OUTLINE_SEARCH_CACHE_MB: "8" }),
    ).toEqual({
      path: "/x/i.db",
      cacheMiB: 8,
    });
    // With no file named, a second instance in the folder takes the one named after its port.
    expect(parseSearchConfig({}, "/srv", 8081)).toEqual({
      path: "/srv/.data/search.db",
      fallback: "/srv/.data/search-8081.db",
      cacheMiB: 32,
    });
    expect(parseSearchConfig({ OUTLINE_SEARCH_DB: "/x/i.db" }, "/srv", 8081)).toEqual({
      path: "/x/i.db",
      cacheMiB: 32,
    });
    expect(parseSearchConfig({}, "/srv", 0).fallback).toBeUndefined();
    expect(() => parseSearchConfig({ OUTLINE_SEARCH_CACHE_MB: "0" })).toThrow(
      /OUTLINE_SEARCH_CACHE_MB/,
    );
  });

  it("checks a search's arguments from either transport", () => {
    expect(searchArgs({ thread: "t", q: "  a\n b ", before: "12", limit: 5 })).toEqual({
      thread: "t",
      q: "a b",
      before: 12,
      limit: 5,
    });
    expect(searchArgs({ thread: "t", q: "x" }).limit).toBe(20);
    expect(() => searchArgs({ thread: "t" })).toThrow(/needs q/);
    expect(() => searchArgs({ thread: "t", q: 3 })).toThrow(/must be a string/);
  });

  it("names the search tool in the outline header only when it is on", () => {
    const input = {
      agent: "north",
      lines: [{ id: 0, n: 1, text: "Ana: hi", until: "2026-01-01T00:00:00Z" }],
      cutAt: "2026-01-01T00:00:00Z",
      tail: [],
    };
    const off = buildOpenAIPrompt(input).messages[0]?.content ?? "";
    const on = buildOpenAIPrompt({ ...input, search: true }).messages[0]?.content ?? "";
    expect(off).not.toContain(SEARCH_HEADER_LINE);
    expect(on).toBe(off.replace("\n<chat>", `\n${SEARCH_HEADER_LINE}\n<chat>`));
    const blocks = buildAnthropicPrompt({ ...input, search: true }).messages[0]?.content;
    expect(Array.isArray(blocks) && blocks.map((b) => b.text).join("")).toBe(on);
  });
});
