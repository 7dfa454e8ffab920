import { createWebSocketInspector } from "@statelyai/inspect";
import type { AnyEventObject, InspectionEvent, MachineContext } from "xstate";
import { heldBack, type ThreadState } from "../../shared/thread.ts";

/** Where `--inspect` sends by default: `outline inspect` listens here. */
export const DEFAULT_INSPECT_URL = "ws://127.0.0.1:8787";

export interface WorkerInspector {
  /** The worker's `inspect` option: every thread actor's inspection events. */
  inspect: (event: InspectionEvent) => void;
  stop(): void;
}

/**
 * `--inspect` → the default URL, `--inspect=ws://host:port` → that URL, absent → undefined.
 * A URL that is not ws:// or wss:// is refused with what to write instead.
 */
export function inspectUrlFromArgv(argv: readonly string[]): string | undefined {
  for (const arg of argv) {
    if (arg === "--inspect") return DEFAULT_INSPECT_URL;
    if (arg.startsWith("--inspect=")) {
      const url = arg.slice("--inspect=".length);
      if (!/^wss?:\/\/\S+$/.test(url)) {
        throw new Error(
          `--inspect: '${url}' is not a WebSocket URL; write --inspect=${DEFAULT_INSPECT_URL} (where 'outline inspect' listens)`,
        );
      }
      return url;
    }
  }
  return undefined;
}

// A thread actor's context holds its whole tail and node store: sending that on every
// transition would flood the socket and the UI. The inspector sees what says where it is.
function summarizeContext(context: MachineContext): MachineContext {
  const core = (context as { core?: Record<string, unknown> }).core;
  if (!core) return context;
  const length = (v: unknown) => (Array.isArray(v) ? v.length : 0);
  return {
    thread: core.thread,
    count: core.count,
    boundary: core.boundary,
    outlineLines: length(core.outline),
    outlineBytes: core.outlineBytes,
    tail: length(core.tail),
    wanted: length(core.wanted),
    inflight: length(core.inflight),
    // Wanted nodes waiting for their summarizer group to fill (HISTORY_GROUP).
    held: heldBack(core as unknown as ThreadState),
    cuts: length(core.cuts),
    deleted: core.deleted,
    // The node (line name) the next cut or merge batch waits for.
    waitingFor: (context as { waitingFor?: unknown }).waitingFor ?? null,
    seq: core.seq,
    stats: core.stats,
    // What the last step asked the host to do (requestSummary, snapshotChanged…), by type.
    effects: ((context as { effects?: { type: string }[] }).effects ?? []).map((e) => e.type),
  };
}

// Message texts can be megabytes; the inspector shows the head of each.
function shortenEvent(event: AnyEventObject): AnyEventObject {
  const message = (event as { message?: { text?: unknown } }).message;
  if (typeof message?.text === "string" && message.text.length > 200) {
    return { ...event, message: { ...message, text: `${message.text.slice(0, 200)}…` } };
  }
  const text = (event as { text?: unknown }).text;
  if (typeof text === "string" && text.length > 200)
    return { ...event, text: `${text.slice(0, 200)}…` };
  return event;
}

/**
 * Sends every thread actor's inspection events to a WebSocket: `outline inspect` (offline), or
 * a relay the Stately inspector UI reads (online). Until the socket opens (and while it is
 * down, retried every 5 s by the adapter) the newest 200 events wait in memory.
 */
export function createWorkerInspector(url: string): WorkerInspector {
  const inspector = createWebSocketInspector({
    url,
    sanitizeContext: summarizeContext,
    sanitizeEvent: shortenEvent,
  });
  return {
    inspect: (event) => inspector.inspect.next?.(event),
    stop: () => inspector.stop(),
  };
}
