// Bench prompt's prompt-builder: its HTTP server over the bench's nats-server, in a process of its
// own as deployed (bench/support/child.ts runs it), so the bench's client, checks and worker
// charge nothing to its event loop or heap. BENCH_PROMPT_CACHE_BYTES=0 makes the server that keeps
// nothing. BENCH_FLOOR=1 adds a server of fixed bodies (`/?bytes=N`): the transfer floor.
// Prints `listening <port> <floor port or 0>`; stops on SIGTERM.
import { createServer, type Server } from "node:http";
import { DEFAULT_SETTINGS } from "../../shared/settings.ts";
import type { InfraNames } from "../../services/config/names.ts";
import { connectNats } from "../../services/nats/connect.ts";
import { createReader } from "../../services/nats/reader.ts";
import { natsHealth } from "../../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../../services/prompt-builder/http.ts";
import { createMetrics } from "../../services/prompt-builder/metrics.ts";
import { createOperations } from "../../services/prompt-builder/operations.ts";
import { countBuffersInHeapLimit } from "../../services/util/heap-limits.ts";

const url = process.env.BENCH_NATS_URL;
const namesJson = process.env.BENCH_NAMES;
if (!url || !namesJson) throw new Error("prompt-server.ts is run by bench/prompt.ts");
const names = JSON.parse(namesJson) as InfraNames;
const cacheBytes = process.env.BENCH_PROMPT_CACHE_BYTES;

// As the prompt-builder's main does.
countBuffersInHeapLimit();
const nc = await connectNats({ url, name: "bench-prompt-builder" });
const metrics = createMetrics(nc, { workerSubject: `${names.apiPrefix}.metrics.worker` });
const server = createHttpServer({
  operations: createOperations(
    createReader(nc, names, { onNewerRead: (path, count) => metrics.newerRead(path, count) }),
    {
      // As the prompt-builder's main sets it.
      tailCap: 2 * DEFAULT_SETTINGS.tail[1],
      onPromptCache: (hit) => metrics.promptCache(hit),
      ...(cacheBytes === undefined ? {} : { promptCacheBytes: Number(cacheBytes) }),
    },
  ),
  metrics,
  health: natsHealth(nc),
  token: undefined,
  log: (line) => console.error(line),
});
const { port } = await listen(server, "127.0.0.1", 0);

/** A body of N bytes, each size built once: what serving costs past the prompt's making. */
function floorServer(): Server {
  const bodies = new Map<number, Buffer>();
  return createServer((req, res) => {
    const bytes = Number(new URL(req.url ?? "/", "http://floor").searchParams.get("bytes"));
    let body = bodies.get(bytes);
    if (!body) bodies.set(bytes, (body = Buffer.alloc(bytes, "x")));
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
  });
}
const floor = process.env.BENCH_FLOOR === "1" ? floorServer() : undefined;
const floorPort = floor ? (await listen(floor, "127.0.0.1", 0)).port : 0;
console.log(`listening ${port} ${floorPort}`);

process.once("SIGTERM", () => {
  server.closeAllConnections();
  server.close();
  floor?.closeAllConnections();
  floor?.close();
  // A normal exit: --cpu-prof (BENCH_PROFILE) writes its profile then.
  void nc.close().finally(() => process.exit(0));
});
