import { ApiError } from "./api-error.ts";
import { isLoopback } from "./access.ts";

/** The host part of a Host header or of an origin's authority (`[::1]:8080` → `[::1]`). */
function hostOf(authority: string): string {
  const bracketed = /^(\[[^\]]*\])(?::\d*)?$/.exec(authority);
  if (bracketed?.[1]) return bracketed[1];
  const colon = authority.lastIndexOf(":");
  return colon === -1 ? authority : authority.slice(0, colon);
}

/**
 * Refuses requests a web page could make through DNS rebinding (a name of the attacker's
 * pointed at 127.0.0.1): an API open without a token listens on loopback only, so it answers
 * only requests that name a loopback host. A token, which no page can attach, is the guard
 * otherwise.
 */
export function checkHost(host: string | undefined, open: boolean): void {
  if (!open || host === undefined || isLoopback(hostOf(host))) return;
  throw new ApiError(
    403,
    "FORBIDDEN_HOST",
    `this API has no token (OUTLINE_API_TOKEN) and answers only requests to a loopback host (localhost, 127.0.0.1, [::1]), not '${host.slice(0, 100)}': reach it by one of those, or set OUTLINE_API_TOKEN to serve it under another name`,
  );
}

/**
 * MCP over HTTP must check Origin (a browser sends one with a page's request): a page of this
 * server's own origin or of a loopback one may call it; any other site is refused.
 */
export function checkOrigin(origin: string | undefined, host: string | undefined): void {
  if (origin === undefined) return;
  let authority: string | undefined;
  try {
    authority = new URL(origin).host;
  } catch {
    authority = undefined;
  }
  if (authority !== undefined && (authority === host || isLoopback(hostOf(authority)))) return;
  throw new ApiError(
    403,
    "FORBIDDEN_ORIGIN",
    `MCP requests from the web page at '${origin.slice(0, 100)}' are refused: only this server's own pages and loopback origins may call /threads/{thread}/mcp from a browser`,
  );
}
