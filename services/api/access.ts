import { timingSafeEqual } from "node:crypto";
import { SettingsError } from "../../shared/errors.ts";

export const TOKEN_VARIABLE = "OUTLINE_API_TOKEN";

/** Hosts only this machine can reach: the API may stay open there, as in `npm start`. */
export function isLoopback(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The bearer token the API requires, or undefined when it may stay open. Prompts are the
 * conversations themselves, so listening beyond this machine without a token is refused at start.
 */
export function apiToken(
  host: string,
  values: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const token = values[TOKEN_VARIABLE]?.trim() || undefined;
  if (token !== undefined && token.length < 16) {
    throw new SettingsError(
      TOKEN_VARIABLE,
      "is shorter than 16 characters; use a long random value, e.g. the output of 'openssl rand -hex 32'",
    );
  }
  if (token === undefined && !isLoopback(host)) {
    throw new SettingsError(
      TOKEN_VARIABLE,
      `is required when HOST=${host} (not a loopback address): anyone who reaches the port could read every thread. Set ${TOKEN_VARIABLE} to a long random value (e.g. 'openssl rand -hex 32') and send 'Authorization: Bearer <token>', or set HOST=127.0.0.1`,
    );
  }
  return token;
}

/** Whether an Authorization header carries the token, compared in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  if (!match?.[1]) return false;
  const given = Buffer.from(match[1]);
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
