import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManagedProcess } from "../services/util/processes.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "outline-managed-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// Exits at once; a child it leaves behind writes to the same stdout a little later.
const EXITS_BEFORE_ITS_OUTPUT = `
const { spawn } = require("node:child_process");
console.log("first");
spawn(process.execPath, ["-e", "setTimeout(() => console.log('late'), 150)"], {
  stdio: "inherit",
  detached: true,
}).unref();
`;

describe("a managed process's log", () => {
  it("keeps the lines that arrive after the process exited, and ends once its output does", async () => {
    const log = join(dir, "child.log");
    const child = new ManagedProcess("early", process.execPath, ["-e", EXITS_BEFORE_ITS_OUTPUT], {
      logFile: log,
      output: "quiet",
    });
    expect((await child.exited).code).toBe(0);
    await child.closed;
    expect(readFileSync(log, "utf8")).toBe("first\nlate\n");
    expect(child.recentOutput()).toContain("late");
  });

  it("is closed for a process that could not start", async () => {
    const child = new ManagedProcess("missing", join(dir, "no-such-program"), [], {
      logFile: join(dir, "missing.log"),
      output: "quiet",
    });
    expect((await child.exited).code).toBe(127);
    await child.closed;
    expect(readFileSync(join(dir, "missing.log"), "utf8")).toBe("");
  });

  it("tells the lines it printed as they came from those it kept quiet, for a notice of its death", async () => {
    const script = `console.log("one"); console.error("two");`;
    const quiet = new ManagedProcess("quiet", process.execPath, ["-e", script], {
      output: "quiet",
    });
    await quiet.closed;
    expect([quiet.unshownOutput(), quiet.printedLines]).toEqual([
      expect.stringMatching(/^(one\ntwo|two\none)$/),
      0,
    ]);
    const missing = new ManagedProcess("missing", join(dir, "no-such-program"), []);
    await missing.closed;
    expect(missing.unshownOutput()).toMatch(/^could not start: .*ENOENT/);
  });
});
