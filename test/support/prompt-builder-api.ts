import type { Server } from "node:http";
import type { NatsConnection } from "@nats-io/transport-node";
import type { CoreSettings } from "../../shared/settings.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { natsHealth } from "../../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../../services/prompt-builder/http.ts";
import { createMetrics } from "../../services/prompt-builder/metrics.ts";
import { serveNatsApi, type NatsApi } from "../../services/prompt-builder/nats-api.ts";
import {
  createOperations,
  type OperationsOptions,
} from "../../services/prompt-builder/operations.ts";
import type { Operations } from "../../services/api/operations-interface.ts";
import { createReader, type ReaderOptions } from "../../services/nats/reader.ts";

/** Small settings so a few hundred messages give many cuts and merges (the fixtures' outline). */
export const SMALL_SETTINGS: CoreSettings = {
  line: 128,
  tail: [200, 400],
  outline: [2000, 4000],
  concurrency: 8,
};

/** The prompt-builder as main.ts wires it, in the test's process: HTTP on a free port and NATS. */
export interface TestApi {
  operations: Operations;
  server: Server;
  natsApi: NatsApi;
  /** `http://127.0.0.1:<port>` */
  base: string;
  close(): Promise<void>;
}

export async function startTestApi(
  nc: NatsConnection,
  names: InfraNames,
  options: {
    operations?: OperationsOptions;
    reader?: ReaderOptions;
    workerTimeoutMs?: number;
    log?: (line: string) => void;
  } = {},
): Promise<TestApi> {
  const log = options.log ?? (() => {});
  const metrics = createMetrics(nc, {
    workerSubject: `${names.apiPrefix}.metrics.worker`,
    workerTimeoutMs: options.workerTimeoutMs ?? 300,
  });
  const reader = createReader(nc, names, {
    onNewerRead: (path, messages) => metrics.newerRead(path, messages),
    ...options.reader,
  });
  const operations = createOperations(reader, {
    onPromptCache: (hit) => metrics.promptCache(hit),
    ...options.operations,
  });
  const server = createHttpServer({
    operations,
    metrics,
    health: natsHealth(nc),
    token: undefined,
    log,
  });
  const base = `http://127.0.0.1:${(await listen(server, "127.0.0.1", 0)).port}`;
  const natsApi = serveNatsApi(nc, names.apiPrefix, operations, metrics, log);
  return {
    operations,
    server,
    natsApi,
    base,
    async close() {
      await natsApi.drain();
      await new Promise((r) => server.close(r));
    },
  };
}
