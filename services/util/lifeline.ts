/**
 * A service started by `npm start` holds an IPC channel to it (its lifeline). When `npm start`
 * dies, even by SIGKILL, the OS closes the channel and the service stops as on SIGTERM, so
 * nothing is left running. A service started any other way has no channel: this does nothing.
 */
export function onSupervisorGone(stop: (why: string) => void): void {
  if (typeof process.send !== "function") return;
  const gone = () => {
    // Our output went to npm start through pipes: now closed, a write must not crash the drain.
    for (const stream of [process.stdout, process.stderr]) stream.on("error", () => {});
    stop("npm start is gone");
  };
  if (!process.connected) return gone();
  // The channel must not keep a service up that has finished its work.
  process.channel?.unref();
  process.once("disconnect", gone);
}
