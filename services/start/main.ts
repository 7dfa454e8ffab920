import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { killAllStarted, runStart } from "./run.ts";
import { SERVICES } from "./services.ts";
import { operatorSignals, whenOrphaned } from "./signals.ts";

// Compiled (dist/start.js), each service runs from its own compiled file beside this one.
const compiledDir = import.meta.url.endsWith(".js")
  ? dirname(fileURLToPath(import.meta.url))
  : undefined;
const services = compiledDir
  ? SERVICES.map((s) => ({ ...s, entry: join(compiledDir, `${s.name}.js`) }))
  : SERVICES;

process.on("exit", killAllStarted);
const signals = operatorSignals();
const code = await runStart(
  { services, argv: process.argv.slice(2), loader: compiledDir ? "none" : "tsx" },
  { stop: Promise.race([signals.stop, whenOrphaned()]), force: signals.force },
);
// Exiting at once could cut off output still queued for a pipe; a stray handle must not keep us up.
process.exitCode = code;
setTimeout(() => process.exit(code), 2_000).unref();
