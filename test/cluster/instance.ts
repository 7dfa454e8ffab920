import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { clusterBucket } from "../../services/cluster/bucket.ts";
import type { ClusterAnswer } from "../../services/cluster/view.ts";
import { partitionMappings } from "../../services/cluster/server-config.ts";
import { namesToEnv, type InfraNames } from "../../services/config/names.ts";
import type { Message } from "../../shared/events.ts";
import type { CoreSettings } from "../../shared/settings.ts";
import { startOwnNats, type FaultScope, type OwnNats } from "../faults/support.ts";
import { ServiceProcess, START_DEADLINE_MS } from "../support/service-process.ts";
import { chatMessage, type Harness } from "../support/thread-worker.ts";

// What the cluster tests share: an instance as a process, a server with the partition mapping,
// publishing as a platform does through a failover, and who held which lease when.

/**
 * One instance as an operator runs it: `npm start` with NATS_URL set (services/start/main.ts:
 * a worker and a prompt-builder, each a child process), in a process group of its own.
 */
export class Instance extends ServiceProcess {
  readonly port: number;

  constructor(
    url: string,
    names: InfraNames,
    settings: CoreSettings,
    port: number,
    extra: Record<string, string> = {},
  ) {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (!/^(HISTORY_|OUTLINE_|NATS_)/.test(key)) env[key] = value;
    }
    Object.assign(env, namesToEnv(names), {
      NATS_URL: url,
      PORT: String(port),
      HOST: "127.0.0.1",
      HISTORY_LINE: String(settings.line),
      HISTORY_TAIL: settings.tail.join(","),
      HISTORY_OUTLINE: settings.outline.join(","),
      HISTORY_CONCURRENCY: String(settings.concurrency),
      HISTORY_GROUP: String(settings.group ?? 1),
      HISTORY_SUMMARIZER: "extractive",
      OUTLINE_CONFIG: "",
      OUTLINE_REPLICAS: "3",
      ...extra,
    });
    super("services/start/main.ts", env, { detached: true });
    this.port = port;
  }

  /** Resolves once its worker consumes and its prompt-builder answers. */
  ready(timeoutMs = START_DEADLINE_MS): Promise<void> {
    return this.started(`instance on port ${this.port}`, ["consuming ", "HTTP on"], timeoutMs);
  }

  /** GET /cluster; an answer other than 200 is an error with its body. */
  async cluster(): Promise<ClusterAnswer> {
    const res = await fetch(`http://127.0.0.1:${this.port}/cluster`, {
      signal: AbortSignal.timeout(60_000),
    });
    if (!res.ok) throw new Error(`GET /cluster: ${res.status} ${await res.text()}`);
    return (await res.json()) as ClusterAnswer;
  }

  /**
   * SIGKILL of the whole process tree at once: the instance dies as a host would. Returns when
   * the signals went out (listing the tree takes a while on a loaded machine).
   */
  killTree(): number {
    const root = this.child.pid;
    if (root === undefined) return Date.now();
    const table = execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" });
    const children = new Map<number, number[]>();
    for (const line of table.trim().split("\n")) {
      const [pid, ppid] = line.trim().split(/\s+/).map(Number) as [number, number];
      children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    }
    const tree: number[] = [];
    const walk = (pid: number) => {
      tree.push(pid);
      for (const c of children.get(pid) ?? []) walk(c);
    };
    walk(root);
    for (const pid of tree) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    return Date.now();
  }
}

/**
 * A nats-server of the test's own, on one server, whose config maps `names`' chat subjects to
 * `partitions` partitions; with `mapped: false` it starts without the mapping, and `map()`
 * writes it for the next restart (the upgrade of docs/scale-out.md).
 */
export async function mappedNats(
  scope: FaultScope,
  names: InfraNames,
  partitions: number,
  mapped = true,
): Promise<{ nats: OwnNats; map: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), "outline-mapping-"));
  scope.stops.push(() => rmSync(dir, { recursive: true, force: true }));
  const conf = join(dir, "nats.conf");
  const map = () => writeFileSync(conf, partitionMappings(names, partitions));
  if (mapped) map();
  else writeFileSync(conf, "");
  const nats = (scope.nats = await startOwnNats({ configFile: conf }));
  return { nats, map };
}

/** How long a platform keeps trying one message through a failover. */
const PUBLISH_PATIENCE_MS = 60_000;

/** Message `i` of `thread`, as a test's platform writes it (chatMessage by default). */
export type MessageMaker = (thread: string, i: number) => Message;

/**
 * Publishes message `i` of `thread` as a platform does through a failover: retried with the same
 * msgID until stored, then recorded in the harness's log with its CHAT sequence.
 */
export async function publish(
  h: Harness,
  thread: string,
  i: number,
  make: MessageMaker = chatMessage,
): Promise<void> {
  const m = make(thread, i);
  // A stream whose leader was killed answers "no responders" at once until one is elected: a
  // reviewer's run saw that last over 12 s (60 tries) on a loaded machine.
  const until = Date.now() + PUBLISH_PATIENCE_MS;
  for (;;) {
    try {
      const ack = await h.js.publish(h.s.messageCreated(thread), JSON.stringify(m), {
        msgID: m.id,
        timeout: 5_000,
      });
      const log = h.log.get(thread) ?? [];
      if (!log.some((e) => e.message.id === m.id)) log.push({ message: m, seq: ack.seq });
      h.log.set(thread, log);
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Messages `from` to `to` (excluded) of every thread, each thread's in order. */
export async function publishRange(
  h: Harness,
  threads: readonly string[],
  from: number,
  to: number,
  make: MessageMaker = chatMessage,
): Promise<void> {
  await Promise.all(
    threads.map(async (t) => {
      for (let i = from; i < to; i++) await publish(h, t, i, make);
    }),
  );
}

/** A write to a lease key of the cluster bucket: who took partition `partition`, or its release. */
export interface LeaseEvent {
  partition: number;
  /** The holder written; undefined for a release (the key deleted). */
  member: string | undefined;
  /** When the server stored it. */
  at: number;
  revision: number;
}

/** The lease keys as they are now, then every write to them, until `stop()`. */
export async function watchLeases(h: Harness): Promise<{ events: LeaseEvent[]; stop: () => void }> {
  const kv = await new Kvm(jetstream(h.nc)).open(clusterBucket(h.names));
  const events: LeaseEvent[] = [];
  const watch = await kv.watch({ key: "lease.>" });
  void (async () => {
    for await (const e of watch) {
      events.push({
        partition: Number(e.key.slice("lease.".length)),
        member: e.operation === "PUT" ? e.json<{ member: string }>().member : undefined,
        at: e.created.getTime(),
        revision: e.revision,
      });
    }
  })();
  return { events, stop: () => watch.stop() };
}

/** A partition that changed holder. */
export interface LeaseMove {
  partition: number;
  from: string;
  to: string;
  /** `from` never let go: `to` took the lease once `from` fell silent (a failover). */
  takenOver: boolean;
  /** From the release (or, taken over, from `from`'s last write of the lease) to the taking. */
  ms: number;
  at: number;
}

/**
 * Every change of holder in the events, in the order they happened. `logs`: the output of every
 * instance that ran. A holder written over another's with no release between is a takeover only
 * if the taker says so ("taking partition k from …", membership.ts): the bucket keeps one entry
 * a key, so a release the next take replaced before this watch read it is never delivered (seen
 * in a CI run at load 5: a hand-over of the rolling restart counted as a failover).
 */
export function leaseMoves(events: readonly LeaseEvent[], logs: readonly string[]): LeaseMove[] {
  const moves: LeaseMove[] = [];
  const holders = new Map<number, LeaseEvent>();
  const released = new Map<number, { from: string; at: number }>();
  const said = (partition: number, from: string) =>
    logs.some((log) => log.includes(`cluster: taking partition ${partition} from ${from},`));
  for (const e of [...events].sort((a, b) => a.revision - b.revision)) {
    const holder = holders.get(e.partition);
    if (e.member === undefined) {
      if (holder?.member) released.set(e.partition, { from: holder.member, at: e.at });
      holders.delete(e.partition);
      continue;
    }
    const free = released.get(e.partition);
    const { partition, member: to, at } = e;
    if (holder?.member && holder.member !== to) {
      const takenOver = said(partition, holder.member);
      moves.push({ partition, from: holder.member, to, takenOver, ms: at - holder.at, at });
    } else if (free && free.from !== to) {
      moves.push({ partition, from: free.from, to, takenOver: false, ms: at - free.at, at });
    }
    released.delete(e.partition);
    holders.set(e.partition, e);
  }
  return moves.sort((a, b) => a.at - b.at);
}
