import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { platform } from "node:os";
import { WebSocket, WebSocketServer, type RawData } from "ws";

// `outline inspect --online`: the same bridge as `@statelyai/inspect/server` (0.7.2), whose
// server cannot be told an address and so listens on every interface; this one listens only on
// the host asked for (127.0.0.1 by default).

export const STATELY_INSPECT_URL = "https://stately.ai/inspect";

// The page the browser opens: it embeds Stately's inspector UI and hands it the events the bridge
// relays. Its socket goes to the page's own host and port (not "localhost"), so the page works
// whatever address it was opened through.
const bridgePage = (inspectorUrl: string): string => `<!DOCTYPE html>
<html>
<head>
  <title>Stately Inspector</title>
  <style>
    * { margin: 0; padding: 0; }
    html, body { height: 100%; }
    iframe { width: 100%; height: 100%; border: none; }
  </style>
</head>
<body>
  <iframe id="inspector" src="${inspectorUrl}"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.data && e.data.type === '@statelyai.connected') {
        connected = true;
        for (const event of buffer) iframe.contentWindow.postMessage(event, '*');
        buffer.length = 0;
      }
    });
    const ws = new WebSocket('ws://' + location.host);
    ws.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (connected) iframe.contentWindow.postMessage(data, '*');
      else buffer.push(data);
    };
  </script>
</body>
</html>`;

/** The events a page opened late still gets, like Stately's server. */
const REPLAYED = 200;

export interface OnlineBridge {
  /** The port listened on (useful with port 0). */
  port: number;
  close(): Promise<void>;
}

const text = (data: RawData): string =>
  Array.isArray(data)
    ? Buffer.concat(data).toString("utf8")
    : Buffer.from(data as ArrayBuffer).toString("utf8");

/** A host as a URL writes it: an IPv6 literal in brackets. */
export const urlHost = (host: string): string => (host.includes(":") ? `[${host}]` : host);

/** The page's URL; a wildcard address is opened through localhost. */
export function pageUrl(host: string, port: number): string {
  return `http://${urlHost(host === "0.0.0.0" || host === "::" ? "localhost" : host)}:${port}/`;
}

/** Opens the URL in the desktop's browser; without one (a server, a container) nothing happens. */
export function openBrowser(url: string): void {
  const opener =
    platform() === "darwin" ? "open" : platform() === "win32" ? "explorer" : "xdg-open";
  const child = execFile(opener, [url], () => {});
  child.on("error", () => {});
  child.unref();
}

/**
 * Serves the bridge page over HTTP and, on the same port, relays every WebSocket message (a
 * worker's inspection events) to the other connections (the open pages).
 */
export async function startOnlineBridge(options: {
  host: string;
  port: number;
  inspectorUrl?: string;
}): Promise<OnlineBridge> {
  const page = bridgePage(options.inspectorUrl ?? STATELY_INSPECT_URL);
  const http = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(page);
  });
  const wss = new WebSocketServer({ server: http });
  // ws re-emits the HTTP server's errors (a port in use); they are reported through http below.
  wss.on("error", () => {});
  const replay: string[] = [];
  wss.on("connection", (socket) => {
    for (const msg of replay) socket.send(msg);
    socket.on("message", (data) => {
      const msg = text(data);
      replay.push(msg);
      if (replay.length > REPLAYED) replay.shift();
      for (const client of wss.clients)
        if (client !== socket && client.readyState === WebSocket.OPEN) client.send(msg);
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === "EADDRINUSE"
            ? `port ${options.port} is in use; pick another with --port P and start the worker with --inspect=ws://127.0.0.1:P`
            : `cannot listen on ${options.host}:${options.port}: ${err.message}`,
        ),
      ),
    );
    http.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (http.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        http.close(() => resolve());
      }),
  };
}
