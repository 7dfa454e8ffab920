import { instanceSearchFile, SEARCH_DB_VARIABLE } from "../config/load.ts";

/** Where `npm run cluster`'s instances find the servers and how each differs from the others. */
export interface ClusterInstance {
  /** The servers' URLs, comma-separated. */
  natsUrl: string;
  /** Its prompt-builder's HTTP port. */
  port: number;
  partitions: number;
  /** The cluster's data folder (`.data/cluster`). */
  dir: string;
}

/**
 * The environment of one of `npm run cluster`'s instances (`npm start` with NATS_URL set), over
 * `env`; `values`, the settings as loaded (a config file may name the search index's file).
 */
export function instanceEnv(
  env: NodeJS.ProcessEnv,
  values: Readonly<Record<string, string | undefined>>,
  instance: ClusterInstance,
): NodeJS.ProcessEnv {
  const { natsUrl, port, partitions, dir } = instance;
  return {
    ...env,
    NATS_URL: natsUrl,
    PORT: String(port),
    OUTLINE_PARTITIONS: String(partitions),
    OUTLINE_REPLICAS: "3",
    // With HISTORY_SEARCH=on, each instance's index beside the cluster's data: not the folder's
    // `npm start` index, which a stream of another server would rebuild.
    [SEARCH_DB_VARIABLE]: values[SEARCH_DB_VARIABLE] ?? instanceSearchFile(dir, port),
  };
}
