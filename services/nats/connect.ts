import { readFileSync } from "node:fs";
import {
  AuthorizationError,
  connect,
  credsAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import type { NatsAuth } from "../config/nats-auth.ts";
import {
  describeNatsUrlSource,
  isLocalUrlFile,
  unreachableAdvice,
  type NatsUrlSource,
} from "../config/nats-url.ts";
import { sleep } from "../util/wait.ts";

/** NATS could not be reached or refused us; the message says which variable to check. */
export class NatsConnectError extends Error {
  override readonly name = "NatsConnectError";
  readonly code = "NATS_UNREACHABLE";
}

export interface ConnectOptions {
  url: string;
  /** Shown in the server's connection list (`nats server report connections`). */
  name: string;
  auth?: NatsAuth;
  /**
   * Where `url` came from (natsUrlSource): errors name it and give the advice that fits it.
   * Unset: NATS_URL.
   */
  from?: NatsUrlSource["from"];
  /**
   * How long to keep trying the first connection. Compose or `npm start` may start us a moment
   * before the server listens; after that we give up with a clear error rather than hang. A URL
   * from a `.data/nats.url` gets one attempt: the file is written once its server listens.
   */
  startupTimeoutMs?: number;
}

// Credentials embedded in a URL must not end up in logs.
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/,]*@/g, "//***@");
}

function authOptions(auth: NatsAuth | undefined): Partial<NodeConnectionOptions> {
  switch (auth?.kind) {
    case undefined:
    case "none":
      return {};
    case "user":
      return { user: auth.user, pass: auth.password };
    case "token":
      return { token: auth.token };
    case "creds":
      return { authenticator: credsAuthenticator(readFileSync(auth.file)) };
  }
}

function authHint(auth: NatsAuth | undefined): string {
  switch (auth?.kind) {
    case "user":
      return "check NATS_USER and NATS_PASSWORD";
    case "token":
      return "check NATS_TOKEN";
    case "creds":
      return "check the file NATS_CREDS points at";
    default:
      return "the server requires credentials: set NATS_USER/NATS_PASSWORD, NATS_TOKEN or NATS_CREDS";
  }
}

/** `NATS_URL` as a list: `nats://a:4222,nats://b:4222` names two servers of one cluster. */
export function natsServers(url: string): string[] {
  return url
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

// Retrying cannot fix wrong credentials, so these end the startup wait at once.
function isAuthFailure(err: unknown): boolean {
  return (
    err instanceof AuthorizationError ||
    (err instanceof Error && err.cause instanceof AuthorizationError)
  );
}

/**
 * Connects once the server answers and then reconnects forever: a service outlives a NATS
 * restart instead of exiting and losing its in-flight work.
 */
export async function connectNats(options: ConnectOptions): Promise<NatsConnection> {
  const from = options.from ?? "setting";
  // A file a killed `npm start` left names a server that will not come back: waiting for it
  // only delays the advice to start it again.
  const waitMs = isLocalUrlFile(from) ? 0 : (options.startupTimeoutMs ?? 10_000);
  const deadline = Date.now() + waitMs;
  const shown = `${redactUrl(options.url)} (${from === "setting" ? "NATS_URL" : describeNatsUrlSource({ from })})`;
  let lastError: unknown;
  for (;;) {
    try {
      return await connect({
        // NATS_URL may list several servers of a cluster, comma-separated (SPEC §9).
        servers: natsServers(options.url),
        name: options.name,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1_000,
        timeout: 5_000,
        // Otherwise every request builds an Error up front for a stack trace it rarely uses: a
        // fifth of the worker's CPU under load (bench e2e). Our errors name the operation anyway.
        noAsyncTraces: true,
        ...authOptions(options.auth),
      });
    } catch (err) {
      lastError = err;
      if (isAuthFailure(err)) {
        throw new NatsConnectError(
          `NATS at ${shown} refused ${options.name}'s credentials: ${(err as Error).message}; ${authHint(options.auth)}`,
          { cause: err },
        );
      }
    }
    if (Date.now() >= deadline) break;
    await sleep(250);
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new NatsConnectError(
    `cannot connect to NATS at ${shown}: ${reason}; ${unreachableAdvice(from)}`,
    { cause: lastError },
  );
}
