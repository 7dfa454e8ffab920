import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadSettings, type Config } from "../config/load.ts";
import { connectNats } from "../nats/connect.ts";
import { createOperations, type Operations } from "../prompt-builder/operations.ts";
import { createReader, type ThreadReader } from "../prompt-builder/reader.ts";
import { LOCAL_URL_FILE, natsUrlSource } from "../config/nats-url.ts";

/** What a command talks to: the same settings and NATS_URL as the services. */
export interface Session {
  config: Config;
  nc: NatsConnection;
  js: JetStreamClient;
  reader: ThreadReader;
  /**
   * Zoom and outline read the streams and the bucket directly: no setting enters them, so they
   * answer as the prompt-builder would, and work while none runs. A prompt depends on the
   * service's settings (HISTORY_SEARCH, the tail's cap): `outline prompt` asks the service.
   */
  operations: Pick<Operations, "zoom" | "outline">;
}

/** Connects for one command and closes afterwards, whatever the command did. */
export async function withSession<T>(use: (session: Session) => Promise<T>): Promise<T> {
  const config = loadSettings();
  for (const warning of config.warnings) process.stderr.write(`outline: warning: ${warning}\n`);
  const { url, from } = natsUrlSource(config);
  // With neither NATS_URL nor a running `npm start` found, a failure may just mean another
  // server answered on the default port: say which one was asked.
  const named = (err: unknown): never => {
    if (from === "default")
      process.stderr.write(
        `outline: asked the nats-server at ${url} (the default: NATS_URL is unset, and no .data/${LOCAL_URL_FILE} of a running 'npm start' in this folder or above)\n`,
      );
    throw err;
  };
  const nc = await connectNats({
    url,
    name: "outline-cli",
    auth: config.auth,
    // A person is waiting: fail fast with the reason rather than retry for long.
    startupTimeoutMs: 3_000,
  }).catch(named);
  try {
    const reader = createReader(nc, config.names);
    return await use({
      config,
      nc,
      js: jetstream(nc),
      reader,
      operations: createOperations(reader),
    }).catch(named);
  } finally {
    await nc.close();
  }
}
