import { loadSettings } from "../config/load.ts";
import { connectNats, redactUrl } from "../nats/connect.ts";
import { ensureTopology } from "../nats/topology.ts";
import { withServerPartitions } from "../nats/partition-probe.ts";
import { createSummarizer } from "../summarizer/index.ts";
import { createWorkerInspector, inspectUrlFromArgv } from "./inspect.ts";
import { consoleLogger, errorText } from "./log.ts";
import { workerSettings } from "./settings.ts";
import { workerMetricsSubject } from "./metrics-endpoint.ts";
import { startThreadWorker } from "./worker.ts";
import { natsUrlSource } from "../config/nats-url.ts";
import { onSupervisorGone } from "../util/lifeline.ts";
import { answerJoin, instanceOf, joinSubject, type WorkerJoin } from "../cluster/instance.ts";

// Wiring only: settings → NATS → topology → summarizer → worker; drain on SIGTERM/SIGINT.
const log = consoleLogger();
/** nats.js's own errors, which say nothing of what was asked. */
const NATS_CLIENT_ERRORS = new Set([
  "TimeoutError",
  "RequestError",
  "NoResponders",
  "JetStreamApiError",
  "JetStreamError",
  "JetStreamNotEnabled",
]);

async function main(): Promise<void> {
  const config = loadSettings();
  for (const warning of config.warnings) log.warn(warning);
  const timings = workerSettings(config.values);
  const instance = instanceOf(config.values);
  const summarizer = createSummarizer(config.settings, config.values);
  // --inspect[=ws://host:port]: thread actors observable in `outline inspect` or Stately's UI.
  const inspectUrl = inspectUrlFromArgv(process.argv.slice(2));
  const inspector = inspectUrl === undefined ? undefined : createWorkerInspector(inspectUrl);
  if (inspectUrl !== undefined) log.info(`sending inspection events to ${inspectUrl}`);
  const { url, from } = natsUrlSource(config);
  const nc = await connectNats({ url, from, name: "outline-thread-worker", auth: config.auth });
  // OUTLINE_PARTITIONS unset: partitioned when the server maps chat subjects (SPEC §3).
  const found = await withServerPartitions(nc, config.names);
  config.names = found.names;
  if (found.note) log.info(found.note);
  // Under `npm start`: its prompt-builder's /healthz says healthy once this answers joined.
  let joinState: () => WorkerJoin = () => ({
    joined: false,
    state: "starting: streams and buckets, then its first plan",
  });
  if (instance !== undefined)
    answerJoin(nc, joinSubject(config.names, instance), () => joinState());
  await ensureTopology(nc, config.names, {
    replicas: config.replicas,
    log: (line) => log.warn(line),
  });
  const worker = await startThreadWorker({
    nc,
    names: config.names,
    settings: config.settings,
    summarizer,
    log,
    replicas: config.replicas,
    ...timings,
    ...(inspector ? { inspect: inspector.inspect } : {}),
  });
  const consumer =
    worker.membership === undefined
      ? config.names.workerDurable
      : `member ${worker.membership.id} holding partitions [${worker.membership.owned().join(",")}] of ${config.names.partitions}`;
  const membership = worker.membership;
  let joined = membership === undefined;
  joinState = () =>
    membership === undefined
      ? { joined: true, state: "consuming (single mode)" }
      : joined
        ? { joined: true, state: `member ${membership.id}, reads its share` }
        : {
            joined: false,
            state: `joining: member ${membership.id} reads partitions [${membership.owned().join(",")}] and waits for the rest of its share`,
          };
  void membership?.joined.then(() => {
    joined = true;
    log.info(
      `joined: member ${membership.id} reads its share, partitions [${membership.owned().join(",")}]`,
    );
  });
  log.info(
    `consuming ${config.names.chatStream} as ${consumer} at ${redactUrl(url)} with ${summarizer.name} (concurrency ${config.settings.concurrency}, group ${config.settings.group ?? 1}); metrics on ${workerMetricsSubject(config.names)}`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal}: draining (stop pulling, finish queued events, save state)`);
    void worker
      .stop()
      .then(() => nc.drain())
      .then(
        () => {
          log.info("stopped");
          process.exit(0);
        },
        (err: unknown) => {
          log.error(`drain failed: ${errorText(err)}`);
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  onSupervisorGone(stop);
}

main().catch((err: unknown) => {
  // A bare client error ("timeout") names no step of the start: its stack says where it was.
  const bare = err instanceof Error && NATS_CLIENT_ERRORS.has(err.name);
  log.error(bare ? (err.stack ?? errorText(err)) : errorText(err));
  process.exit(1);
});
