import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  engines: { node: string };
  dependencies: Record<string, string>;
};

describe("the runtime", () => {
  // npm scripts put node_modules/.bin first on PATH, so the tests run on the `node` package's
  // runtime, whatever Node runs npm: the version shipped is the version tested.
  it("is the Node that package.json's node dependency names, within engines", () => {
    expect(process.version).toBe(`v${pkg.dependencies.node}`);
    const floor = /^>=(\d+)$/.exec(pkg.engines.node)?.[1];
    expect(floor, "engines.node is >=N").toBeDefined();
    expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(Number(floor));
  });

  it("has node:sqlite, which the search index uses, without a warning", async () => {
    const warnings: string[] = [];
    const listen = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", listen);
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(":memory:");
    db.exec("CREATE VIRTUAL TABLE f USING fts5 (text, tokenize='trigram case_sensitive 0')");
    db.close();
    await new Promise((r) => setTimeout(r, 10));
    process.off("warning", listen);
    expect(warnings.filter((w) => /sqlite/i.test(w))).toEqual([]);
  });
});
