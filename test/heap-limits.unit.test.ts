import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const probe = fileURLToPath(new URL("./support/heap-limit-probe.ts", import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

function majorCollections(mode: "on" | "off"): number {
  const out = execFileSync(process.execPath, ["--import", tsx, probe, mode], { encoding: "utf8" });
  return (JSON.parse(out) as { major: number }).major;
}

describe("countBuffersInHeapLimit", () => {
  it("stops short-lived Buffers from starting full collections of their own", () => {
    const off = majorCollections("off");
    const on = majorCollections("on");
    // V8's default runs a full collection per ~64 MB of new off-heap bytes (9-11 here); counted
    // in the limit, 1-2 quiet and up to 4 with the suite's other files running beside it.
    expect(off).toBeGreaterThanOrEqual(6);
    expect(on).toBeLessThanOrEqual(off / 2);
  }, 30_000);
});
