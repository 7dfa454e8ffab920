import { loadSettings } from "../config/load.ts";
import { natsUrlSource } from "../config/nats-url.ts";
import { connectNats, redactUrl } from "../nats/connect.ts";
import { ensureTopology } from "../nats/topology.ts";
import { withServerPartitions } from "../nats/partition-probe.ts";
import { searchSubject } from "./api.ts";
import { parseSearchConfig } from "./config.ts";
import { startSearchService } from "./service.ts";
import { onSupervisorGone } from "../util/lifeline.ts";

// Wiring only: settings → NATS → index file → indexer → search → NATS API; drain on signal.
const log = (line: string) => console.error(line);

async function main(): Promise<void> {
  const config = loadSettings();
  for (const warning of config.warnings) log(`search: warning: ${warning}`);
  const search = parseSearchConfig(config.values, process.cwd(), config.settings.port);
  if (!config.settings.search) {
    // Started by hand: it serves the API; agents are offered the tool only with the setting on.
    log(
      "search: HISTORY_SEARCH is off: agents are not offered the search tool (npm start runs this service only when it is on)",
    );
  }
  const { url, from } = natsUrlSource(config);
  const nc = await connectNats({ url, from, name: "outline-search", auth: config.auth });
  config.names = (await withServerPartitions(nc, config.names)).names;
  try {
    await ensureTopology(nc, config.names, { replicas: config.replicas });
  } catch (err) {
    log(`search: topology not checked (${(err as Error).message}); reads wait for the worker`);
  }
  const service = await startSearchService({
    nc,
    names: config.names,
    path: search.path,
    ...(search.fallback === undefined ? {} : { fallback: search.fallback }),
    cacheMiB: search.cacheMiB,
    log,
  });
  const { applied } = service.indexer.progress();
  log(
    `search: index ${service.indexer.path} (CHAT read to sequence ${applied}), answering ${searchSubject(config.names.apiPrefix)} once caught up, at ${redactUrl(url)}`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`search: ${signal}: draining`);
    void service
      .stop()
      .then(() => nc.drain())
      .then(
        () => {
          log("search: stopped");
          process.exit(0);
        },
        (err: unknown) => {
          log(`search: drain failed: ${(err as Error).message}`);
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  onSupervisorGone(stop);
}

main().catch((err: unknown) => {
  log(`search: ${(err as Error).message}`);
  process.exit(1);
});
