import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { SettingsError } from "../../shared/errors.ts";

/** How a service proves who it is to NATS. Credentials in NATS_URL itself also work. */
export type NatsAuth =
  | { kind: "none" }
  | { kind: "user"; user: string; password: string }
  | { kind: "token"; token: string }
  | { kind: "creds"; file: string };

export const AUTH_VARIABLES = {
  user: "NATS_USER",
  password: "NATS_PASSWORD",
  token: "NATS_TOKEN",
  creds: "NATS_CREDS",
} as const;

/** Picks one way to authenticate; two at once is refused because the server would accept only one. */
export function parseNatsAuth(
  source: Readonly<Record<string, string | undefined>>,
  cwd: string,
): NatsAuth {
  const get = (name: string): string | undefined => {
    const value = source[name];
    return value === undefined || value.trim() === "" ? undefined : value;
  };
  const user = get(AUTH_VARIABLES.user);
  const password = get(AUTH_VARIABLES.password);
  const token = get(AUTH_VARIABLES.token);
  const creds = get(AUTH_VARIABLES.creds);

  const chosen = [
    user !== undefined || password !== undefined ? "NATS_USER/NATS_PASSWORD" : undefined,
    token !== undefined ? AUTH_VARIABLES.token : undefined,
    creds !== undefined ? AUTH_VARIABLES.creds : undefined,
  ].filter((x) => x !== undefined);
  if (chosen.length > 1) {
    throw new SettingsError(
      chosen[1] ?? AUTH_VARIABLES.token,
      `set only one of ${chosen.join(", ")}; NATS accepts one way to authenticate per connection`,
    );
  }
  if (user !== undefined || password !== undefined) {
    if (user === undefined) {
      throw new SettingsError(
        AUTH_VARIABLES.user,
        "NATS_PASSWORD is set but NATS_USER is not; set both",
      );
    }
    if (password === undefined) {
      throw new SettingsError(
        AUTH_VARIABLES.password,
        "NATS_USER is set but NATS_PASSWORD is not; set both",
      );
    }
    return { kind: "user", user, password };
  }
  if (token !== undefined) return { kind: "token", token };
  if (creds !== undefined) {
    const file = resolve(cwd, creds.trim());
    if (!existsSync(file)) {
      throw new SettingsError(
        AUTH_VARIABLES.creds,
        `'${file}' does not exist; point it at a NATS .creds file (nsc generate creds) or unset it`,
      );
    }
    return { kind: "creds", file };
  }
  return { kind: "none" };
}
