import { jetstream } from "@nats-io/jetstream";
import { KvWatchInclude, Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ServerResponse } from "node:http";
import type { InfraNames } from "../config/names.ts";
import { ApiError } from "../api/api-error.ts";
import type { ActorStates } from "./actors.ts";
import type { LiveEvent } from "./types.ts";

/** Pages open at once per prompt-builder; each holds a KV watch and a subscription. */
export const MAX_STREAMS = 64;
/** A comment this often keeps proxies from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

/**
 * Live updates of open thread pages, as server-sent events: `snapshot` when the thread's
 * snapshot is written (a KV watch on its key, headers only: the page reads what changed), and
 * `actor` for each state change of its actor (the actor feed, which the worker publishes only
 * while a page watches). One watch and one feed subscription per thread, shared by its pages.
 */
export function liveThreads(nc: NatsConnection, names: InfraNames, actors: ActorStates) {
  let kv: Promise<KV> | undefined;
  const bucket = () =>
    (kv ??= new Kvm(jetstream(nc)).open(names.kvBucket).catch((err: unknown) => {
      kv = undefined;
      throw err;
    }));
  const pages = new Map<string, Set<ServerResponse>>();
  const stops = new Map<string, () => void>();
  let open = 0;

  const send = (thread: string, event: LiveEvent) => {
    const text = `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    for (const res of pages.get(thread) ?? []) res.write(text);
  };

  async function watch(thread: string): Promise<() => void> {
    const watcher = await (
      await bucket()
    ).watch({ key: thread, headers_only: true, include: KvWatchInclude.UpdatesOnly });
    void (async () => {
      for await (const entry of watcher) {
        send(thread, {
          type: "snapshot",
          revision: entry.revision,
          deleted: entry.operation !== "PUT",
        });
      }
    })().catch(() => undefined);
    const unfollow = actors.follow(thread, (transition) =>
      send(thread, { type: "actor", transition }),
    );
    return () => {
      watcher.stop();
      unfollow();
    };
  }

  return {
    /** Streams `thread`'s events to `res` until the client goes away or close() is called. */
    async stream(thread: string, res: ServerResponse): Promise<void> {
      if (open >= MAX_STREAMS) {
        throw new ApiError(
          503,
          "TOO_MANY_STREAMS",
          `${MAX_STREAMS} explorer pages already follow threads live on this prompt-builder; close some, or run another instance`,
        );
      }
      open += 1;
      let set = pages.get(thread);
      const first = !set;
      if (!set) {
        set = new Set();
        pages.set(thread, set);
      }
      set.add(res);
      const leave = () => {
        clearInterval(keepalive);
        if (!set.delete(res)) return;
        open -= 1;
        if (set.size > 0) return;
        pages.delete(thread);
        stops.get(thread)?.();
        stops.delete(thread);
      };
      const keepalive = setInterval(() => res.write(": keepalive\n\n"), KEEPALIVE_MS);
      res.on("close", leave);
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-accel-buffering": "no",
      });
      res.write("retry: 2000\n\n");
      if (!first) return;
      try {
        const stop = await watch(thread);
        if (pages.get(thread) === set) stops.set(thread, stop);
        else stop();
      } catch (err) {
        res.write(
          `event: failure\ndata: ${JSON.stringify({ message: `cannot watch the snapshot bucket: ${(err as Error).message}` })}\n\n`,
        );
        res.end();
      }
    },

    /** Ends every stream (the server is stopping: open streams would hold it up). */
    close(): void {
      // Closed, not kept alive for another request: the server is waiting for them to go.
      for (const set of pages.values()) {
        for (const res of set) {
          res.shouldKeepAlive = false;
          res.end();
        }
      }
      for (const stop of stops.values()) stop();
      stops.clear();
      pages.clear();
      open = 0;
    },
  };
}

export type LiveThreads = ReturnType<typeof liveThreads>;
