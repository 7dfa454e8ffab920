import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { bearerMatches } from "../api/access.ts";

const COOKIE = "outline_ui";
/** A browser session lasts a working day; then the token is asked for again. */
const SESSION_SECONDS = 12 * 60 * 60;

/**
 * The explorer's auth: the API's token (OUTLINE_API_TOKEN), which a browser cannot attach to a
 * page load or an EventSource. The page asks for it once and sends it as a bearer header to
 * /ui/api/session, which answers with an HttpOnly, SameSite=Strict cookie holding an HMAC of the
 * token (not the token itself); every /ui/api/ request then carries either. No token set (a
 * loopback HOST): open, as the API is.
 */
export function explorerSession(token: string | undefined) {
  const value =
    token === undefined
      ? undefined
      : createHmac("sha256", token).update("outline explorer session").digest("base64url");

  function cookieOf(req: IncomingMessage): string | undefined {
    for (const part of (req.headers.cookie ?? "").split(";")) {
      const [key, ...rest] = part.trim().split("=");
      if (key === COOKIE) return rest.join("=");
    }
    return undefined;
  }

  return {
    /** Whether the request may read: no token set, the bearer token, or the session cookie. */
    allows(req: IncomingMessage): boolean {
      if (token === undefined || value === undefined) return true;
      if (bearerMatches(req.headers.authorization, token)) return true;
      const given = Buffer.from(cookieOf(req) ?? "");
      const wanted = Buffer.from(value);
      return given.length === wanted.length && timingSafeEqual(given, wanted);
    },

    /** The Set-Cookie header that opens a session (undefined when none is needed). */
    cookie(req: IncomingMessage): string | undefined {
      if (value === undefined) return undefined;
      const secure = req.headers["x-forwarded-proto"] === "https" || "encrypted" in req.socket;
      return `${COOKIE}=${value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=${SESSION_SECONDS}${secure ? "; Secure" : ""}`;
    },
  };
}

export type ExplorerSession = ReturnType<typeof explorerSession>;
