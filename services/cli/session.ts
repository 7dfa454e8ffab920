import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { loadSettings, type Config } from "../config/load.ts";
import { connectNats } from "../nats/connect.ts";
import { createOperations, type Operations } from "../prompt-builder/operations.ts";
import { createReader, type ThreadReader } from "../prompt-builder/reader.ts";

/** What a command talks to: the same settings and NATS_URL as the services. */
export interface Session {
  config: Config;
  nc: NatsConnection;
  js: JetStreamClient;
  reader: ThreadReader;
  operations: Operations;
}

// `npm start` runs its nats-server here when the port is free; a CLI without NATS_URL tries it.
export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

/** Connects for one command and closes afterwards, whatever the command did. */
export async function withSession<T>(use: (session: Session) => Promise<T>): Promise<T> {
  const config = loadSettings();
  const url = config.settings.natsUrl ?? DEFAULT_NATS_URL;
  const nc = await connectNats({
    url,
    name: "outline-cli",
    auth: config.auth,
    // A person is waiting: fail fast with the reason rather than retry for long.
    startupTimeoutMs: 3_000,
  });
  try {
    const reader = createReader(nc, config.names);
    return await use({
      config,
      nc,
      js: jetstream(nc),
      reader,
      operations: createOperations(reader, { tailCap: 2 * config.settings.tail[1] }),
    });
  } finally {
    await nc.close();
  }
}
