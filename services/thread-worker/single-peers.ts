import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { KvWatchInclude, type KvEntry, type KvWatchEntry } from "@nats-io/kv";
import type { SingleWorker } from "../../shared/api.ts";
import { SettingsError } from "../../shared/errors.ts";
import { clusterBucket, openClusterBucket } from "../cluster/bucket.ts";
import type { InfraNames } from "../config/names.ts";
import type { SettingValues } from "../config/whole-setting.ts";
import { kvKeys } from "../nats/buckets.ts";
import { errorText, type Logger } from "./log.ts";

/** Lets a single-mode worker run beside another on the same stream (docs/scale-out.md). */
export const SINGLE_PEERS_VARIABLE = "OUTLINE_ALLOW_SINGLE_PEERS";

/** OUTLINE_ALLOW_SINGLE_PEERS: `1`/`true`/`on` lets a newcomer run on; unset or off stops it. */
export function allowSinglePeersOf(values: SettingValues): boolean {
  const raw = values[SINGLE_PEERS_VARIABLE]?.trim().toLowerCase();
  if (raw === undefined || raw === "" || ["0", "false", "off"].includes(raw)) return false;
  if (["1", "true", "on"].includes(raw)) return true;
  throw new SettingsError(
    SINGLE_PEERS_VARIABLE,
    `'${raw}' is neither on (1, true, on) nor off (0, false, off)`,
  );
}

/** A single-mode worker's heartbeat, `single.<id>` in the cluster bucket (GET /cluster lists it). */
interface SingleInfo extends Pick<SingleWorker, "id" | "host" | "pid" | "since"> {
  /** The revision of its first heartbeat: the lower one came first. */
  first?: number;
}

export interface SinglePeersOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: InfraNames;
  replicas: number;
  log: Logger;
  /** A heartbeat older than this is a worker gone (OUTLINE_FAILOVER_MS). */
  failoverMs: number;
  /** OUTLINE_ALLOW_SINGLE_PEERS: a newcomer runs on beside the worker it found. */
  allowPeers: boolean;
  beatMs?: number;
  /** Whether a process of this host still runs (a worker killed leaves its key behind). */
  alive?: (pid: number) => boolean;
}

export interface SinglePeers {
  /** Deletes the heartbeat: the others see this worker gone at once. */
  stop(): Promise<void>;
  /** Crash simulation: stops beating, writes nothing more. */
  abandon(): void;
}

/** A newcomer found another single-mode worker and was not told to run beside it. */
export class SinglePeerError extends Error {
  override readonly name = "SinglePeerError";
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Single mode: each worker heartbeats `single.<id>` in the cluster bucket and watches the
 * others' keys. Two on one stream would fight over every thread (each write fenced, each thread
 * given up and taken back): each says so in one line naming the other, and the one that came
 * second stops (a SinglePeerError) unless `allowPeers`.
 */
export async function watchSinglePeers(options: SinglePeersOptions): Promise<SinglePeers> {
  const { names, log, failoverMs } = options;
  const beatMs = options.beatMs ?? Math.min(1_000, Math.floor(failoverMs / 3));
  const alive = options.alive ?? running;
  const host = hostname();
  const kv = await openClusterBucket(options.js, names, options.replicas);
  const id = `${host.replace(/[^A-Za-z0-9_-]/g, "_")}-${process.pid}-${randomBytes(2).toString("hex")}`;
  const key = `single.${id}`;
  const me: SingleInfo = { id, host, pid: process.pid, since: new Date().toISOString() };
  const told = new Set<string>();
  const stream = names.chatStream;
  const fix =
    `run them partitioned instead: the server's config needs the partition mapping ` +
    `(npm start's own server has it; docs/scale-out.md) and each worker OUTLINE_PARTITIONS, ` +
    `or stop one`;
  let first = 0;

  // A peer is told of once; which of the two speaks first depends on who came first.
  const tell = (peer: SingleInfo, peerFirst: number): "newcomer" | "incumbent" | undefined => {
    if (peer.id === id || told.has(peer.id)) return undefined;
    told.add(peer.id);
    const who = `(host ${peer.host}, pid ${peer.pid}, since ${peer.since})`;
    if (peerFirst < first) {
      log.error(
        `another single-mode worker ${who} consumes stream ${stream} on this server: two would fight over every thread; ${fix}. ` +
          (options.allowPeers
            ? `${SINGLE_PEERS_VARIABLE} is on: running beside it`
            : `This one stops (set ${SINGLE_PEERS_VARIABLE}=1 to run beside it)`),
      );
      return "newcomer";
    }
    log.warn(
      `another single-mode worker ${who} started on stream ${stream} on this server: two would fight over every thread; ${fix}. ` +
        `It stops unless ${SINGLE_PEERS_VARIABLE} is on`,
    );
    return "incumbent";
  };

  // Watched before our first beat, so no peer's beat falls between the read below and the watch.
  const watch = await kv.watch({ key: "single.>", include: KvWatchInclude.UpdatesOnly });
  let info: SingleInfo = me;
  const put = async () => {
    const revision = await kv.put(key, JSON.stringify(info));
    if (first === 0) {
      first = revision;
      info = { ...me, first };
    }
  };
  try {
    await put();
  } catch (err) {
    // The check is a courtesy: a store that refuses the beat (full, read-only) must not stop a
    // worker that would otherwise run; later beats try again.
    log.warn(
      `cannot write ${key} in bucket ${clusterBucket(names)} (${errorText(err)}): another single-mode worker on stream ${stream} goes unnoticed until a beat is written`,
    );
  }

  if (first !== 0) {
    const mine = await kv.get(key);
    const now = mine?.created.getTime() ?? Date.now();
    // Keys there before us: a peer is live while its beat is recent (server time against server
    // time), or, on this host, while its process runs; an earlier worker of this process is us.
    const keys = (await kvKeys(options.jsm, clusterBucket(names))).filter(
      (k) => k.startsWith("single.") && k !== key,
    );
    const entries = (await Promise.all(keys.map((k) => kv.get(k)))).filter(
      (e): e is KvEntry => e !== null && e.operation === "PUT",
    );
    let newcomer = false;
    for (const entry of entries) {
      const peer = entry.json<SingleInfo>();
      if (now - entry.created.getTime() > failoverMs) continue;
      if (peer.host === host && (peer.pid === process.pid || !alive(peer.pid))) continue;
      if (tell(peer, peer.first ?? entry.revision) === "newcomer") newcomer = true;
    }
    if (newcomer && !options.allowPeers) {
      watch.stop();
      await kv.delete(key).catch(() => undefined);
      throw new SinglePeerError(
        `another single-mode worker runs on stream ${stream} (above); set ${SINGLE_PEERS_VARIABLE}=1 to run beside it`,
      );
    }
  }

  void (async () => {
    for await (const entry of watch as AsyncIterable<KvWatchEntry>) {
      if (entry.operation !== "PUT" || entry.key === key) continue;
      const peer = entry.json<SingleInfo>();
      if (peer.host === host && peer.pid === process.pid) continue;
      tell(peer, peer.first ?? entry.revision);
    }
  })().catch((err: unknown) => log.warn(`watching single-mode workers: ${errorText(err)}`));

  const beat = setInterval(() => {
    put().catch((err: unknown) => {
      log.warn(`heartbeat ${key} of bucket ${clusterBucket(names)}: ${errorText(err)}`);
    });
  }, beatMs);
  beat.unref();

  return {
    async stop() {
      clearInterval(beat);
      watch.stop();
      await kv.delete(key).catch(() => undefined);
    },
    abandon() {
      clearInterval(beat);
      watch.stop();
    },
  };
}
