// Runs nats-server for `npm start` (argv: the binary, then its arguments) and stops it when
// `npm start` is gone, SIGKILL included: nats-server cannot watch its parent, this process can,
// through its IPC channel. It waits for the services (their pids come over the channel) to
// drain first, as an orderly stop does, then sends SIGINT (JetStream flushes) and exits as
// nats-server did. SIGINT and SIGTERM sent to it are passed on. Plain JavaScript: it starts
// before anything is compiled and must start fast.
import { spawn } from "node:child_process";

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  process.stderr.write("usage: node nats-lifeline.js <nats-server> [args…]\n");
  process.exit(64);
}
// Its output passes through us: once `npm start` is gone our writes fail (ignored below), while
// nats-server still writes to a live pipe. Inherited, it would die of SIGPIPE mid-shutdown.
const server = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
server.stdout.on("data", (chunk) => process.stdout.write(chunk));
server.stderr.on("data", (chunk) => process.stderr.write(chunk));
process.stdout.on("error", () => {});
process.stderr.on("error", () => {});
/** @type {number[]} */
let services = [];

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === "EPERM";
  }
}

process.on("message", (message) => {
  const pids = /** @type {{ services?: unknown }} */ (message)?.services;
  if (Array.isArray(pids)) services = pids.filter((p) => typeof p === "number");
});
for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM"])) {
  process.on(signal, () => server.kill(signal));
}
process.on("disconnect", () => {
  const deadline = Date.now() + 30_000;
  const poll = setInterval(() => {
    if (services.some(alive) && Date.now() < deadline) return;
    clearInterval(poll);
    server.kill("SIGINT");
    setTimeout(() => server.kill("SIGKILL"), 15_000).unref();
  }, 100);
});
process.channel?.unref();
server.on("error", (err) => {
  process.stderr.write(`could not start ${command}: ${err.message}\n`);
  process.exit(127);
});
server.on("exit", (code, signal) => {
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
