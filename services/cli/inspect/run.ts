import { parse, str } from "../args.ts";
import { DEFAULT_INSPECT_URL } from "../../thread-worker/inspect.ts";
import { openBrowser, pageUrl, startOnlineBridge, urlHost } from "./online.ts";
import { startInspectServer } from "./server.ts";
import { formatLine } from "./transitions.ts";

export const INSPECT_USAGE = `usage: outline inspect [--thread T] [--port P] [--host H] [--online]

Receives the inspection events of running thread workers and prints each actor's transitions
live: time, thread, from state --event--> to state, and the thread's count, boundary, outline
lines and jobs after it. Start the worker with --inspect (sends to ${DEFAULT_INSPECT_URL}) or
--inspect=ws://127.0.0.1:P to match --port P.

  --thread T   only this thread
  --port P     port to listen on (default 8787)
  --host H     address to listen on (default 127.0.0.1)
  --online     instead of printing, relay the events to Stately's inspector UI in a browser
               (https://stately.ai/inspect, needs internet): serves a page on --host:--port
               that embeds it, and opens it`;

export interface InspectDeps {
  stdout?: { write(text: string): void };
  stderr?: { write(text: string): void };
  /** Resolves when the command should stop (default: SIGINT or SIGTERM). */
  until?: Promise<void>;
  /** --online opens its page with this (default: the desktop's browser, if any). */
  openBrowser?: (url: string) => void;
}

function defaultUntil(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
}

// The online UI runs in the browser; the bridge serves a page that embeds it and relays the
// worker's events to it over the same port, listening only on --host.
async function online(
  host: string,
  port: number,
  deps: {
    stderr: { write(text: string): void };
    until: Promise<void>;
    open: (url: string) => void;
  },
): Promise<number> {
  let bridge;
  try {
    bridge = await startOnlineBridge({ host, port });
  } catch (err) {
    deps.stderr.write(`inspect: ${(err as Error).message}\n`);
    return 2;
  }
  const url = pageUrl(host, bridge.port);
  deps.stderr.write(
    `inspect: open ${url} in a browser (it embeds https://stately.ai/inspect, so it needs internet); start the worker with --inspect=ws://${urlHost(host)}:${bridge.port} (Ctrl-C stops)\n`,
  );
  deps.open(url);
  await deps.until;
  await bridge.close();
  return 0;
}

/** `outline inspect …`: resolves to the exit code when stopped. */
export async function run(argv: readonly string[], deps: InspectDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  let parsed;
  try {
    parsed = parse(
      argv,
      {
        thread: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        online: { type: "boolean" },
      },
      0,
    );
  } catch (err) {
    stderr.write(`inspect: ${(err as Error).message} (see 'outline inspect --help')\n`);
    return 2;
  }
  const thread = str(parsed.values.thread);
  const portText = str(parsed.values.port);
  const host = str(parsed.values.host) ?? "127.0.0.1";
  if (parsed.help) {
    stdout.write(`${INSPECT_USAGE}\n`);
    return 0;
  }
  const port = portText === undefined ? 8787 : Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    stderr.write(
      `inspect: --port '${portText}' is not a port; write a number from 0 to 65535, e.g. --port 8787\n`,
    );
    return 2;
  }
  if (parsed.values.online === true)
    return online(host, port, {
      stderr,
      until: deps.until ?? defaultUntil(),
      open: deps.openBrowser ?? openBrowser,
    });
  let server;
  try {
    server = await startInspectServer({
      host,
      port,
      ...(thread === undefined ? {} : { thread }),
      onLine: (line) => stdout.write(`${formatLine(line)}\n`),
      onBadMessage: (reason) => stderr.write(`inspect: ${reason}\n`),
    });
  } catch (err) {
    stderr.write(`inspect: ${(err as Error).message}\n`);
    return 2;
  }
  stderr.write(
    `inspect: listening on ws://${urlHost(host)}:${server.port}${thread ? ` for thread ${thread}` : ""}; start the worker with --inspect=ws://${urlHost(host)}:${server.port} (Ctrl-C stops)\n`,
  );
  await (deps.until ?? defaultUntil());
  await server.close();
  return 0;
}
