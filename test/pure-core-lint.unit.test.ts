import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
import { describe, expect, it } from "vitest";
import { pureCoreRules } from "../eslint.pure-core.js";

// The rule set that keeps shared/ pure, applied to snippets as if they lived in shared/.
const eslint = new ESLint({
  overrideConfigFile: true,
  overrideConfig: [
    { files: ["**/*.ts"], languageOptions: { parser: tseslint.parser }, rules: pureCoreRules },
  ],
});

async function problems(code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: "shared/snippet.ts" });
  return (result?.messages ?? []).map((m) => m.message);
}

describe("shared/ stays pure (ESLint rule)", () => {
  it.each([
    ['import { readFileSync } from "node:fs";', /pure core/],
    ['import { connect } from "@nats-io/transport-node";', /pure core/],
    ['import OpenAI from "openai";', /pure core/],
    ["export const now = Date.now();", /no clock/],
    ["export const now = new Date();", /no clock/],
    ["export const id = Math.random();", /randomness/],
    ["export const env = process.env.X;", /environment/],
    ["setTimeout(() => {}, 1);", /no clock/],
    ['export const r = fetch("http://x");', /network/],
  ])("refuses %s", async (code, reason) => {
    const found = await problems(code);
    expect(
      found.some((m) => reason.test(m)),
      found.join("; "),
    ).toBe(true);
  });

  it("accepts pure code, including a date parsed from data", async () => {
    expect(await problems('export const t = Date.parse("2026-01-01T00:00:00Z");')).toEqual([]);
    expect(await problems('import { z } from "zod";\nexport const s = z.string();')).toEqual([]);
  });
});
