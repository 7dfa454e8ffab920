import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { build, isFresh } from "../../services/build/build.js";
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    natsUrl: string;
    natsStoreDir: string;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nats-server did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

let server: ChildProcess | undefined;
let storeDir: string | undefined;

/** Starts one nats-server with JetStream for the whole run, on a free port, in a temporary store. */
export async function setup(project: TestProject): Promise<void> {
  // The e2e tier runs the services and the CLI compiled, as deployed: built once here, before
  // any test starts one (a build per process would race).
  if (process.env.OUTLINE_FROM_SOURCES !== "1" && !isFresh()) await build();
  const port = await freePort();
  storeDir = mkdtempSync(join(tmpdir(), "outline-test-nats-"));
  server = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const spawnError = new Promise<never>((_, reject) =>
    server?.once("error", (err) =>
      reject(
        new Error(
          `could not start nats-server (${err.message}); install it (Debian: apt-get install -y nats-server)`,
        ),
      ),
    ),
  );
  await Promise.race([waitForPort(port, 10_000), spawnError]);
  const url = `nats://127.0.0.1:${port}`;
  process.env.NATS_URL = url;
  project.provide("natsUrl", url);
  project.provide("natsStoreDir", storeDir);
}

/** Stops the server and waits for it to exit before removing its store (it writes until then). */
export async function teardown(): Promise<void> {
  const running = server;
  if (running && running.exitCode === null && running.signalCode === null) {
    const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
    running.kill("SIGINT");
    const timer = setTimeout(() => running.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
  if (storeDir) rmSync(storeDir, { recursive: true, force: true, maxRetries: 3 });
}
