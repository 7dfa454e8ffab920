import { clusterView, serveCluster } from "../cluster/view.ts";
import { failoverMsOf } from "../cluster/failover.ts";
import { loadSettings } from "../config/load.ts";
import { connectNats, redactUrl } from "../nats/connect.ts";
import { confirmSubscriptions, watchSubscriptions } from "../nats/permission-violations.ts";
import { ensureTopology } from "../nats/topology.ts";
import { withServerPartitions } from "../nats/partition-probe.ts";
import { apiToken } from "../api/access.ts";
import { createExplorer } from "../explorer/explorer.ts";
import { instanceHealth, natsHealth } from "./health.ts";
import { askJoin, instanceOf, joinSubject } from "../cluster/instance.ts";
import { createHttpServer, listen } from "./http.ts";
import { operationsBackend } from "./mcp.ts";
import { createMcpHttp } from "./mcp-http.ts";
import { createMetrics } from "./metrics.ts";
import { serveNatsApi } from "./nats-api.ts";
import { createOperations } from "./operations.ts";
import { createReader } from "../nats/reader.ts";
import { forwardSearch } from "./search-forward.ts";
import { natsUrlSource } from "../config/nats-url.ts";
import { onSupervisorGone } from "../util/lifeline.ts";
import { countBuffersInHeapLimit } from "../util/heap-limits.ts";

// Wiring only: settings → NATS → reader → operations → HTTP and NATS transports; drain on signal.
const log = (line: string) => console.error(line);

async function main(): Promise<void> {
  countBuffersInHeapLimit();
  const config = loadSettings();
  for (const warning of config.warnings) log(`prompt-builder: warning: ${warning}`);
  const { host, port } = config.settings;
  const token = apiToken(host, config.values);
  const instance = instanceOf(config.values);
  const { url, from } = natsUrlSource(config);
  const nc = await connectNats({ url, from, name: "outline-prompt-builder", auth: config.auth });
  // Events the server's mapping stored with a partition token are read in that form too.
  config.names = (await withServerPartitions(nc, config.names)).names;
  try {
    await ensureTopology(nc, config.names, { replicas: config.replicas });
  } catch (err) {
    // A least-privilege user may not create streams; the worker does, and reads retry until then.
    log(
      `prompt-builder: topology not checked (${(err as Error).message}); reads will wait for the worker to create it`,
    );
  }
  const metrics = createMetrics(nc, { workerSubject: `${config.names.apiPrefix}.metrics.worker` });
  const reader = createReader(nc, config.names, {
    onNewerRead: (path, messages) => metrics.newerRead(path, messages),
  });
  // Twice the tail's high mark: a tail that large means summaries lag (cuts are waiting), and a
  // prompt must stay sendable meanwhile.
  const operations = createOperations(reader, {
    tailCap: 2 * config.settings.tail[1],
    onPromptCache: (hit) => metrics.promptCache(hit),
    search: config.settings.search,
  });
  const natsApi = serveNatsApi(nc, config.names.apiPrefix, operations, metrics, log);
  const search = forwardSearch(nc, config.names.apiPrefix, { on: config.settings.search });
  const explorer = createExplorer({
    nc,
    names: config.names,
    reader,
    operations,
    settings: config.settings,
    token,
    // The page shows a search box only when a search service answers (HISTORY_SEARCH=on).
    search: config.settings.search
      ? async (raw) => JSON.parse(new TextDecoder().decode(await search(raw))) as unknown
      : undefined,
  });
  const cluster = clusterView(nc, config.names, failoverMsOf(config.values));
  const clusterApi = serveCluster(nc, config.names, cluster, log);
  // A refused subscription leaves the API unanswered while HTTP looks healthy: stop at start.
  const prefix = config.names.apiPrefix;
  const apiSubscriptions = [...natsApi.subscriptions, clusterApi.subscription];
  const refusedFix = `the prompt-builder answers requests on ${prefix}.>: give that user subscribe on ${prefix}.> (as user prompt-builder has in nats/nats-server.conf), or start the prompt-builder as a user that has it (docs/infrastructure.md, "One user for both services")`;
  await confirmSubscriptions(nc, apiSubscriptions, config.auth, refusedFix);
  watchSubscriptions(apiSubscriptions, config.auth, refusedFix, (err) => {
    log(`prompt-builder: ${err.message}`);
    process.exit(1);
  });
  const server = createHttpServer({
    operations,
    metrics,
    // Under `npm start` healthy once its own worker joined, not merely once this one listens.
    health:
      instance === undefined
        ? natsHealth(nc)
        : instanceHealth(natsHealth(nc), () =>
            askJoin(nc, joinSubject(config.names, instance), 1_000),
          ),
    token,
    log,
    explorer,
    search,
    cluster,
    mcp: createMcpHttp(operationsBackend(operations, search, config.settings.search)),
  });
  const address = await listen(server, host, port);
  log(
    `prompt-builder: HTTP on http://${address.address.includes(":") ? `[${address.address}]` : address.address}:${address.port}${token ? " (bearer token required)" : ""}, explorer at /ui/, MCP at /threads/{thread}/mcp, NATS API on ${config.names.apiPrefix}.{prompt,zoom,outline,tools} at ${redactUrl(url)}`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`prompt-builder: ${signal}: draining`);
    explorer.close();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    void Promise.all([closed, natsApi.drain(), clusterApi.drain()])
      .then(() => nc.drain())
      .then(
        () => {
          log("prompt-builder: stopped");
          process.exit(0);
        },
        (err: unknown) => {
          log(`prompt-builder: drain failed: ${(err as Error).message}`);
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  onSupervisorGone(stop);
}

main().catch((err: unknown) => {
  log(`prompt-builder: ${(err as Error).message}`);
  process.exit(1);
});
