import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApiError } from "../services/api/api-error.ts";
import { checkHost, checkOrigin } from "../services/api/origin.ts";

const loopback = fc.constantFrom("localhost", "127.0.0.1", "127.3.2.1", "[::1]", "LOCALHOST");
const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });
const withPort = (host: string, p: number | undefined) => (p === undefined ? host : `${host}:${p}`);
// Names a page's DNS could point at 127.0.0.1: anything but a loopback name or address.
const outside = fc.constantFrom("evil.example", "10.0.0.5", "outline.internal", "[2001:db8::1]");

function code(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return `${err.status} ${err.code}`;
    throw err;
  }
}

describe("the API's guard against DNS rebinding", () => {
  it("answers an open API's requests to loopback hosts, with or without a port", () => {
    fc.assert(
      fc.property(loopback, port, (host, p) => {
        expect(code(() => checkHost(withPort(host, p), true))).toBeUndefined();
      }),
    );
  });

  it("refuses an open API's requests naming any other host, and leaves a token's API alone", () => {
    fc.assert(
      fc.property(outside, port, (host, p) => {
        expect(code(() => checkHost(withPort(host, p), true))).toBe("403 FORBIDDEN_HOST");
        expect(code(() => checkHost(withPort(host, p), false))).toBeUndefined();
      }),
    );
  });

  it("lets MCP be called without Origin, from loopback pages and from its own origin", () => {
    fc.assert(
      fc.property(loopback, port, outside, (host, p, own) => {
        expect(code(() => checkOrigin(undefined, own))).toBeUndefined();
        expect(code(() => checkOrigin(`http://${withPort(host, p)}`, own))).toBeUndefined();
        expect(code(() => checkOrigin(`https://${withPort(own, p)}`, withPort(own, p)))).toBe(
          undefined,
        );
      }),
    );
  });

  it("refuses MCP from another site's page, and an Origin that is not a URL", () => {
    fc.assert(
      fc.property(outside, port, (site, p) => {
        const own = "127.0.0.1:8080";
        expect(code(() => checkOrigin(`https://${withPort(site, p)}`, own))).toBe(
          "403 FORBIDDEN_ORIGIN",
        );
      }),
    );
    expect(code(() => checkOrigin("null", "127.0.0.1:8080"))).toBe("403 FORBIDDEN_ORIGIN");
  });
});
