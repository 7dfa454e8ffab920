import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { SettingsError } from "../../shared/errors.ts";
import { parseSettings, SETTING_VARIABLES, type Settings } from "../../shared/settings.ts";
import { readConfigFile } from "./file.ts";
import { NAME_VARIABLES, PARTITIONS_VARIABLE, parseNames, type InfraNames } from "./names.ts";
import { AUTH_VARIABLES, parseNatsAuth, type NatsAuth } from "./nats-auth.ts";

export const CONFIG_VARIABLE = "OUTLINE_CONFIG";
export const REPLICAS_VARIABLE = "OUTLINE_REPLICAS";
export const DEFAULT_CONFIG_FILE = "outline.config.json";

/** Everything a service needs to know at start, parsed and checked. */
export interface Config {
  settings: Settings;
  names: InfraNames;
  auth: NatsAuth;
  /** Copies of each stream a NATS cluster keeps, used when outline creates them. */
  replicas: number;
  /** The file read, as an absolute path, or undefined when none. */
  configFile: string | undefined;
  /**
   * File values overlaid with the environment, for variables other modules read themselves
   * (e.g. OPENAI_BASE_URL), so the config file can hold those too.
   */
  values: Readonly<Record<string, string | undefined>>;
  /** Things worth telling the operator that do not stop the service (e.g. an unknown key). */
  warnings: string[];
}

/** The search index's file (services/search/config.ts); `npm run cluster` names one per instance. */
export const SEARCH_DB_VARIABLE = "OUTLINE_SEARCH_DB";

/** An instance's own search index file in `dir`, named after its HTTP port. */
export const instanceSearchFile = (dir: string, port: number): string =>
  join(dir, `search-${port}.db`);

/**
 * Variables a service reads itself from `values` (so the config file may hold them too): the
 * prompt-builder's bearer token, the worker's timings, the search index's file and cache.
 */
export const SERVICE_VARIABLES = [
  "OUTLINE_API_TOKEN",
  "OUTLINE_IDLE_MS",
  "OUTLINE_MAX_ACTORS",
  "OUTLINE_ACK_WAIT_MS",
  "OUTLINE_BACKLOG_LIMIT",
  "OUTLINE_SAVE_LINGER_MS",
  "OUTLINE_FAILOVER_MS",
  "OUTLINE_CAPACITY",
  "OUTLINE_ALLOW_SINGLE_PEERS",
  SEARCH_DB_VARIABLE,
  "OUTLINE_SEARCH_CACHE_MB",
];

const KNOWN = new Set<string>([
  CONFIG_VARIABLE,
  REPLICAS_VARIABLE,
  ...SERVICE_VARIABLES,
  ...Object.values(SETTING_VARIABLES),
  ...Object.values(NAME_VARIABLES),
  PARTITIONS_VARIABLE,
  ...Object.values(AUTH_VARIABLES),
]);
// Keys of our own families that we do not know are most likely typos.
const OURS = /^(HISTORY_|OUTLINE_|NATS_)/;

function parseReplicas(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const value = raw.trim();
  if (value !== "1" && value !== "3" && value !== "5") {
    throw new SettingsError(
      REPLICAS_VARIABLE,
      `'${raw}' is not a replica count; JetStream keeps 1, 3 or 5 copies (3 in production on a cluster)`,
    );
  }
  return Number(value);
}

function configPathFromArgv(argv: readonly string[]): string | undefined {
  for (const [i, arg] of argv.entries()) {
    if (arg === "--config") {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) {
        throw new SettingsError("--config", "needs a file path, e.g. --config outline.config.json");
      }
      return next;
    }
    if (arg.startsWith("--config=")) return arg.slice("--config=".length);
  }
  return undefined;
}

/**
 * Reads the settings: an optional JSON config file (from `--config`, else `OUTLINE_CONFIG`, else
 * `./outline.config.json` when it exists), then the environment on top. An empty environment
 * variable counts as unset, so compose files can pass `${VAR:-}` through. Throws a SettingsError
 * naming the variable when anything does not parse.
 */
export function loadSettings(
  env: Readonly<Record<string, string | undefined>> = process.env,
  argv: readonly string[] = process.argv.slice(2),
  cwd: string = process.cwd(),
): Config {
  const fromArgv = configPathFromArgv(argv);
  const fromEnv = env[CONFIG_VARIABLE]?.trim() || undefined;
  const variable = fromArgv !== undefined ? "--config" : CONFIG_VARIABLE;
  const explicit = fromArgv ?? fromEnv;
  let configFile: string | undefined;
  if (explicit !== undefined) {
    configFile = resolve(cwd, explicit);
    if (!existsSync(configFile)) {
      throw new SettingsError(
        variable,
        `config file '${configFile}' does not exist; create it or unset ${variable}`,
      );
    }
  } else if (existsSync(resolve(cwd, DEFAULT_CONFIG_FILE))) {
    configFile = resolve(cwd, DEFAULT_CONFIG_FILE);
  }

  const fileValues = configFile !== undefined ? readConfigFile(configFile, variable) : {};
  const warnings: string[] = [];
  for (const key of Object.keys(fileValues)) {
    if (OURS.test(key) && !KNOWN.has(key)) {
      warnings.push(`config file '${configFile}': unknown key ${key} is ignored (a typo?)`);
    }
  }
  const values: Record<string, string | undefined> = { ...fileValues };
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value.trim() !== "") values[key] = value;
  }

  return {
    settings: parseSettings(values),
    names: parseNames(values),
    auth: parseNatsAuth(values, cwd),
    replicas: parseReplicas(values[REPLICAS_VARIABLE]),
    configFile,
    values,
    warnings,
  };
}
