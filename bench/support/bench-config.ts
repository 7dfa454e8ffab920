import { fileURLToPath } from "node:url";

/**
 * The config file the benches hand to what they run (`OUTLINE_CONFIG`): an empty one, so the
 * defaults are measured even when the directory the bench runs in holds an
 * `outline.config.json` (which the worker and the CLI would otherwise read).
 */
export const BENCH_CONFIG_FILE = fileURLToPath(new URL("./defaults.config.json", import.meta.url));
