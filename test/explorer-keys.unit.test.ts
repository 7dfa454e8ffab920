import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HELP_KEYS } from "../services/explorer/ui/help-keys.ts";

/** The keys docs/explorer.md's "Keyboard" table names, each written in backticks. */
function documentedKeys(): string[] {
  const doc = readFileSync("docs/explorer.md", "utf8");
  const section = doc.slice(doc.indexOf("## Keyboard"));
  const table = section.slice(0, section.indexOf("\n\n", section.indexOf("| key")));
  return [...table.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);
}

describe("the explorer's ? dialog", () => {
  it("lists every key docs/explorer.md lists, g (the newest page) included", () => {
    const keys = documentedKeys();
    expect(keys).toEqual(expect.arrayContaining(["/", "Enter", "n", "p", "g", "u", "Esc", "?"]));
    const listed = new Set(HELP_KEYS.flatMap(([k]) => k.split(/\s+/)));
    expect(keys.filter((k) => !listed.has(k))).toEqual([]);
  });
});
