import { WebSocketServer, type RawData } from "ws";
import { createTransitionTracker, type InspectLine } from "./transitions.ts";

export interface InspectServer {
  /** The port listened on (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

export interface InspectServerOptions {
  host?: string;
  port: number;
  /** Only this thread's lines; every thread when undefined. */
  thread?: string;
  onLine: (line: InspectLine) => void;
  /** A message that is not an inspection event: reported, the connection goes on. */
  onBadMessage?: (reason: string) => void;
}

const text = (data: RawData): string =>
  Array.isArray(data)
    ? Buffer.concat(data).toString("utf8")
    : Buffer.from(data as ArrayBuffer).toString("utf8");

/**
 * A local WebSocket server that workers started with `--inspect=ws://host:port` connect to.
 * Each connection (a worker process) sends JSON inspection events; sessions are tracked across
 * connections, so the lines read as one stream.
 */
export async function startInspectServer(options: InspectServerOptions): Promise<InspectServer> {
  const track = createTransitionTracker();
  const wss = new WebSocketServer({ host: options.host ?? "127.0.0.1", port: options.port });
  await new Promise<void>((resolve, reject) => {
    wss.once("listening", resolve);
    wss.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === "EADDRINUSE"
            ? `port ${options.port} is in use; pick another with --port P and start the worker with --inspect=ws://127.0.0.1:P`
            : `cannot listen on ${options.host ?? "127.0.0.1"}:${options.port}: ${err.message}`,
        ),
      ),
    );
  });
  wss.on("connection", (socket) => {
    socket.on("message", (data) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text(data));
      } catch {
        options.onBadMessage?.(
          "a message that is not JSON was ignored (is the sender an XState inspector?)",
        );
        return;
      }
      const line = track(parsed);
      if (!line) return;
      if (options.thread !== undefined && line.thread !== options.thread) return;
      options.onLine(line);
    });
  });
  const address = wss.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
}
