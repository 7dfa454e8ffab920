import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inspectWatch } from "../services/start/run.ts";

describe("the banner's inspector hint", () => {
  it("names the port and host `npm start -- --inspect=URL` sends to", () => {
    expect(inspectWatch("--inspect")).toBe("npx outline inspect");
    expect(inspectWatch("--inspect=ws://127.0.0.1:18287")).toBe("npx outline inspect --port 18287");
    expect(inspectWatch("--inspect=ws://0.0.0.0:9000/path")).toBe(
      "npx outline inspect --host 0.0.0.0 --port 9000",
    );
    expect(inspectWatch("--inspect=ws://[::1]:9000")).toBe(
      "npx outline inspect --host ::1 --port 9000",
    );
    expect(inspectWatch("--inspect=ws://localhost")).toBe(
      "npx outline inspect --host localhost --port 80",
    );
  });

  it("does not offer outline inspect where it cannot receive", () => {
    expect(inspectWatch("--inspect=wss://example.com:9000")).toBe(
      "a receiver of your own (npx outline inspect takes ws:// only)",
    );
    expect(inspectWatch("--inspect=not a url")).toContain("--inspect=ws://host:port");
  });

  it("carries any port of a loopback URL", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 65535 }), (port) => {
        const hint = inspectWatch(`--inspect=ws://127.0.0.1:${port}`);
        // URL drops a scheme's default port (80 for ws): the hint names it anyway.
        expect(hint).toBe(`npx outline inspect --port ${port}`);
      }),
    );
  });
});
