import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { loadSettings } from "../config/load.ts";
import { removeLocalNatsUrl, writeLocalNatsUrl } from "../config/nats-url.ts";
import { ManagedProcess } from "../util/processes.ts";
import { instanceEnv } from "./instance-env.ts";
import { startLocalCluster } from "./local.ts";
import { untilStop } from "./supervise.ts";

// `npm run cluster [-- --instances N] [--keep-going]`: a local cluster as docs/scale-out.md describes it: three
// nats-servers on loopback (JetStream, the partition mapping, R3 streams) and N instances, each
// `npm start` with NATS_URL listing the three servers. Ctrl-C drains the instances, then stops
// the servers.
const USAGE = `usage: npm run cluster [-- --instances N] [--keep-going]

Starts 3 nats-servers on 127.0.0.1 (client ports OUTLINE_CLUSTER_PORT, default 14222, and the two
after it) as one JetStream cluster with the partition mapping of docs/scale-out.md, then N
instances (default 2), each a worker and a prompt-builder on PORT, PORT+1, … (default 8080).
Data in ./.data/cluster. Ctrl-C stops it all.

When one instance exits (its worker or prompt-builder died, or was killed) every instance is
drained and the servers stopped, unless:

  --keep-going   an instance that exits is reported and the others keep running, so a failover
                 can be tried: kill a worker (its pid is in GET /cluster) and watch the others
                 take its partitions. It all stops once every instance has exited.`;

const log = (line: string) => console.error(`cluster: ${line}`);

function argValue(argv: readonly string[], name: string): string | undefined {
  const i = argv.findIndex((a) => a === name || a.startsWith(`${name}=`));
  if (i < 0) return undefined;
  const arg = argv[i] as string;
  return arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[i + 1];
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  const keepGoing = argv.includes("--keep-going");
  const unknown = argv.find(
    (a, i) =>
      a.startsWith("-") &&
      a !== "--keep-going" &&
      !(a === "--instances" || a.startsWith("--instances=")) &&
      argv[i - 1] !== "--instances",
  );
  if (unknown !== undefined) {
    console.error(`unknown option ${unknown}\n${USAGE}`);
    return 2;
  }
  const count = Number(argValue(argv, "--instances") ?? 2);
  if (!Number.isSafeInteger(count) || count < 1 || count > 16) {
    console.error(`--instances must be a whole number from 1 to 16\n${USAGE}`);
    return 2;
  }
  const config = loadSettings({
    ...process.env,
    OUTLINE_PARTITIONS: process.env.OUTLINE_PARTITIONS ?? "32",
  });
  const partitions = config.names.partitions ?? 32;
  const basePort = Number(process.env.OUTLINE_CLUSTER_PORT ?? 14_222);
  const httpPort = config.settings.port;
  const dir = resolve(".data", "cluster");
  mkdirSync(dir, { recursive: true });
  log(`starting 3 nats-servers on 127.0.0.1:${basePort}-${basePort + 2} (data in ${dir})`);
  const cluster = await startLocalCluster({ dir, names: config.names, partitions, basePort });
  // The CLI run in this folder finds these servers as it finds npm start's (.data/cluster/nats.url).
  writeLocalNatsUrl(dir, cluster.url);
  const loader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const instances: ManagedProcess[] = [];
  for (let i = 0; i < count; i++) {
    const port = httpPort + i;
    instances.push(
      new ManagedProcess(
        `i${i + 1}`,
        process.execPath,
        ["--import", loader, "services/start/main.ts"],
        {
          env: instanceEnv(process.env, config.values, {
            natsUrl: cluster.url,
            port,
            partitions,
            dir,
          }),
          logFile: join(dir, `instance-${i + 1}.log`),
        },
      ),
    );
  }
  log(
    `${count} instance(s) on http://127.0.0.1:${httpPort}${count > 1 ? `-${httpPort + count - 1}` : ""}; NATS_URL=${cluster.url} OUTLINE_PARTITIONS=${partitions}; who owns what: curl http://127.0.0.1:${httpPort}/cluster`,
  );

  let stopping = false;
  const stopped = new Promise<string>((resolveStop) => {
    const stop = (signal: string) => {
      if (stopping) {
        for (const p of instances) p.signal("SIGKILL");
        return;
      }
      stopping = true;
      resolveStop(signal);
    };
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGTERM", () => stop("SIGTERM"));
  });
  const { why, failed } = await untilStop(instances, stopped, { keepGoing, log });
  log(`${why}: draining the instances, then the servers (Ctrl-C again kills at once)`);
  await Promise.all(instances.map((p) => p.stop("SIGTERM", 20_000)));
  await cluster.stop();
  removeLocalNatsUrl(dir);
  log("stopped");
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log((err as Error).message);
    process.exit(1);
  },
);
