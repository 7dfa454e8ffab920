import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

/**
 * True when `err` says the server (or the user's account) has no JetStream: nats.js turns "no
 * responders" on `$JS.API.…` into JetStreamNotEnabled, and the server answers an account
 * without it with code 10039. Nothing of outline works there, so callers stop and say so.
 */
export function isJetStreamOff(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "JetStreamNotEnabled") return true;
  if (
    err instanceof JetStreamApiError &&
    err.code === JetStreamApiCodes.JetStreamNotEnabledForAccount
  )
    return true;
  return /jetstream (is )?not enabled/i.test(err.message);
}

/** How to turn JetStream on, for the messages that find it off. */
export const ENABLE_JETSTREAM =
  "run the server as 'nats-server -js', or add 'jetstream {}' to its config file (with accounts, enable it for the account too)";
