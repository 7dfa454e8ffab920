import { apiToken } from "../api/access.ts";
import type { ServiceEntry } from "./run.ts";

/** The services `npm start` runs, in start order; stopped together on Ctrl-C. */
export const SERVICES: readonly ServiceEntry[] = [
  {
    name: "thread-worker",
    entry: "services/thread-worker/main.ts",
    // `npm start -- --inspect[=url]`: this worker's thread actors to the inspector (a second
    // worker started for it would share the consumer and see only some threads).
    args: (argv) => argv.filter((a) => a === "--inspect" || a.startsWith("--inspect=")),
  },
  {
    name: "prompt-builder",
    entry: "services/prompt-builder/main.ts",
    http: true,
    // What its main.ts logs once it listens (the tests wait for it too).
    ready: "prompt-builder: HTTP on ",
    // Off loopback without OUTLINE_API_TOKEN it would refuse to start: refused here instead.
    check: (config) => void apiToken(config.settings.host, config.values),
  },
  // The search index (docs/search.md) costs disk and CPU per message: only when it is on.
  { name: "search", entry: "services/search/main.ts", when: (config) => config.settings.search },
];
