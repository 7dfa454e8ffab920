import { killAllStarted, runStart, type ServiceEntry } from "./run.ts";

// The services `npm start` runs, in start order; stopped together on Ctrl-C.
const SERVICES: readonly ServiceEntry[] = [
  { name: "thread-worker", entry: "services/thread-worker/main.ts" },
  { name: "prompt-builder", entry: "services/prompt-builder/main.ts", http: true },
  // The search index (docs/search.md) costs disk and CPU per message: only when it is on.
  { name: "search", entry: "services/search/main.ts", when: (config) => config.settings.search },
];

function signalOnce(nth: number): Promise<string> {
  return new Promise((resolve) => {
    let seen = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      seen += 1;
      if (seen === nth) resolve(signal);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

process.on("exit", killAllStarted);
const code = await runStart(
  { services: SERVICES, argv: process.argv.slice(2) },
  { stop: signalOnce(1), force: signalOnce(2) },
);
// Exiting at once could cut off output still queued for a pipe; a stray handle must not keep us up.
process.exitCode = code;
setTimeout(() => process.exit(code), 2_000).unref();
