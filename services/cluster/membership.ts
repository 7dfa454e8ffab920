import { hostname } from "node:os";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { KvWatchEntry } from "@nats-io/kv";
import {
  assignPartitions,
  liveMembers,
  planLeases,
  type LeasePlan,
} from "../../shared/ownership.ts";
import type { InfraNames } from "../config/names.ts";
import { startupStep } from "../nats/startup-step.ts";
import { kvStream } from "../nats/buckets.ts";
import {
  checkLayout,
  clusterBucket,
  leaseKey,
  memberId,
  memberKey,
  openClusterBucket,
  type MemberInfo,
} from "./bucket.ts";
import { DEFAULT_FAILOVER_MS } from "./failover.ts";
import { heartbeatsAt, type Beat } from "./heartbeats.ts";
import { watchFromCurrent } from "./watch-current.ts";
import { sleep } from "../util/wait.ts";

/** Partitions a member alone opens at a time (it may hear others meanwhile). */
export const WAVE = 8;

/** How long a change seen in the watch waits for the ones stored with it before a plan. */
export const GATHER_MS = 50;

export interface MembershipOptions {
  js: JetStreamClient;
  names: InfraNames;
  partitions: number;
  replicas: number;
  failoverMs?: number;
  capacity?: number;
  /** About to write the leases of partitions it will take: reads ahead that need no lease. */
  prepare?(partitions: number[]): void;
  /** Takes partitions: start reading them. `takeover`: their last holder died. */
  acquire(partitions: number[], takeover: boolean): Promise<void>;
  /** Gives partitions up: stop reading them and save their threads; resolves when done. */
  release(partitions: number[]): Promise<void>;
  /** What the heartbeat reports besides the partitions. */
  stats(): { threads: number; lag: number };
  /**
   * The settings its threads run under (`threadSettingsText`), in its heartbeat: a member
   * running others is warned of, as a thread moving between them changes settings.
   */
  settings?: string;
  /** Tests: how long a watch may take to deliver the current values (WATCH_CATCH_UP_MS). */
  watchCatchUpMs?: number;
  log: { info(line: string): void; warn(line: string): void };
}

export interface Membership {
  readonly id: string;
  /** Partitions this member holds, ascending. */
  owned(): number[];
  /**
   * Members heard from within the failover time at the last plan, this one and any leaving
   * included: the workers that may hold threads now.
   */
  heard(): number;
  /**
   * Resolves the first time a plan ends with this member reading every partition the assignment
   * gives it among the members it hears (its share): an instance is ready then, not before.
   */
  readonly joined: Promise<void>;
  /** Drains and lets every partition go at once, then leaves the bucket. */
  leave(): Promise<void>;
  /** Crash simulation: stops heartbeating, lets nothing go. */
  abandon(): void;
}

/**
 * Joins the members in the bucket: heartbeats, watches the others, and takes and lets go of
 * partitions as `planLeases` says. Liveness is judged on this process's clock from when each
 * heartbeat was seen, so clocks of other hosts do not matter.
 */
export async function joinCluster(options: MembershipOptions): Promise<Membership> {
  const { names, partitions, log } = options;
  const failoverMs = options.failoverMs ?? DEFAULT_FAILOVER_MS;
  const beatMs = Math.max(50, Math.floor(failoverMs / 4));
  const id = memberId();
  // Each request of the join is asked again while the bucket, made a moment ago by this or
  // another instance, has no leader yet (startupStep): instances may start at once.
  const retrying = (line: string) => log.warn(`cluster: ${line}`);
  const step = <T>(what: string, fn: () => Promise<T>) => startupStep(what, fn, { log: retrying });
  const kv = await openClusterBucket(options.js, names, options.replicas, retrying);
  await checkLayout(kv, partitions, names, retrying);

  const since = new Date().toISOString();
  const beats = new Map<string, Beat>();
  const holders = new Map<number, { member: string; revision: number }>();
  const owned = new Set<number>();
  let heardCount = 1;
  /** Our leases' revisions, from our own writes. */
  const mine = new Map<number, number>();
  /** The newest revision known of each lease key, ours or seen in the watch. */
  const leaseRevisions = new Map<number, number>();
  let leaving = false;
  let stopped = false;

  const info = (): MemberInfo => ({
    id,
    host: hostname(),
    pid: process.pid,
    since,
    capacity: options.capacity ?? 1,
    partitions: [...owned].sort((a, b) => a - b),
    ...options.stats(),
    ...(options.settings === undefined ? {} : { settings: options.settings }),
    ...(leaving ? { leaving: true } : {}),
  });
  // Silence counts only while our own heartbeats are stored. While the bucket cannot be written
  // (its leader's server died: 6 s in the cluster test's case (c)) nobody beats, and the first
  // member to write again must not take the others' partitions for a silence the bucket caused:
  // their silence counts from our first heartbeat stored after it.
  let cutOff = false;
  let countFrom = 0;
  const heardAt = (b: { seenAt: number }) => (cutOff ? Date.now() : Math.max(b.seenAt, countFrom));
  const beat = async () => {
    try {
      await kv.put(memberKey(id), JSON.stringify(info()));
    } catch (err) {
      cutOff = true;
      throw err;
    }
    if (cutOff) [cutOff, countFrom] = [false, Date.now()];
  };

  const letGoFailed = (k: number, err: unknown) =>
    log.warn(`cluster: could not let go of partition ${k}: ${(err as Error).message}`);

  /** Members warned of for running other settings, and which. */
  const otherSettings = new Map<string, string>();
  const compareSettings = (who: string, theirs: string | undefined) => {
    const ours = options.settings;
    if (who === id || !ours || !theirs || theirs === ours || otherSettings.get(who) === theirs)
      return;
    otherSettings.set(who, theirs);
    log.warn(
      `cluster: member ${who} runs its threads with ${theirs}, this one with ${ours}: a thread takes the settings of whichever member holds its partition, and changes them when it moves (each change recorded, so replay still matches); set them alike on every instance (docs/scale-out.md)`,
    );
  };

  const onEntry = (e: KvWatchEntry) => {
    if (e.key.startsWith("member.")) {
      const who = e.key.slice("member.".length);
      if (e.operation === "PUT") {
        const info = e.json<MemberInfo>();
        beats.set(who, { seenAt: Date.now(), revision: e.revision, info });
        compareSettings(who, info.settings);
      } else beats.delete(who);
    } else if (e.key.startsWith("lease.")) {
      const k = Number(e.key.slice("lease.".length));
      // Our own writes are recorded when made: an older event arriving later must not undo them.
      if (e.revision < (leaseRevisions.get(k) ?? 0)) return;
      leaseRevisions.set(k, e.revision);
      if (e.operation === "PUT")
        holders.set(k, { member: e.json<{ member: string }>().member, revision: e.revision });
      else holders.delete(k);
    }
  };

  /**
   * Leases the bucket says are ours that this member does not hold: a take whose answer was lost
   * (a write stored, its reply timed out on a loaded cluster). Left so, the partition was never
   * read and never let go. Each is read once more from the bucket's leader; those still ours are
   * recorded as our own writes, for the plan to keep (read them) or release.
   */
  const leasesFound = async (): Promise<number[]> => {
    const found: number[] = [];
    const known = new Set<number>();
    for (const [k, h] of holders) {
      if (h.member !== id || owned.has(k)) continue;
      // Left unopened by a wave, at the revision of our own write: nothing to read again.
      if (deferred.delete(k) && mine.get(k) === h.revision) {
        found.push(k);
        known.add(k);
        continue;
      }
      const entry = await kv.get(leaseKey(k));
      if (entry) leaseRevisions.set(k, Math.max(leaseRevisions.get(k) ?? 0, entry.revision));
      const member = entry?.operation === "PUT" ? entry.json<{ member: string }>().member : "";
      if (!entry || !member) holders.delete(k);
      else holders.set(k, { member, revision: entry.revision });
      if (entry && member === id) {
        mine.set(k, entry.revision);
        found.push(k);
      }
    }
    const lost = found.filter((k) => !known.has(k));
    if (lost.length > 0) log.warn(`cluster: found partitions ${lost.join(",")} leased to us`);
    return found;
  };

  let lastPlan: LeasePlan | undefined;
  let joinedNow: (() => void) | undefined;
  const joined = new Promise<void>((resolve) => (joinedNow = resolve));
  /** The owner of each partition by the assignment among the members heard now. */
  const ownersNow = (): string[] => {
    const now = Date.now();
    const { heartbeats } = heartbeatsAt(beats, id, now, heardAt, failoverMs, leaving);
    return assignPartitions(partitions, liveMembers(heartbeats, now, failoverMs));
  };
  /** Every partition assigned to this member is open (at a plan's end: what it took is read). */
  const holdsShare = (): boolean => ownersNow().every((owner, k) => owner !== id || owned.has(k));
  // Reconciles one at a time; an event during a run asks for one more run after it.
  let running: Promise<void> | undefined;
  let again = false;
  // A run when the next member turns silent, not at the next heartbeat tick after it.
  let expiry: NodeJS.Timeout | undefined;
  const aimAtExpiry = () => {
    clearTimeout(expiry);
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [who, b] of beats) {
      const at = heardAt(b) + failoverMs;
      if (who !== id && at >= now) next = Math.min(next, at);
    }
    if (stopped || next === Number.POSITIVE_INFINITY) return;
    expiry = setTimeout(kick, next - now + 1);
    expiry.unref();
  };
  // Changes seen in the watch are acted on a moment later: a member handing partitions over
  // deletes their leases together, and a plan made at the first delete took one partition, then
  // the rest in another round (each a lease write and a consumer create on R3).
  let gathering: NodeJS.Timeout | undefined;
  const kickSoon = () => {
    if (gathering || stopped) return;
    gathering = setTimeout(() => {
      gathering = undefined;
      kick();
    }, GATHER_MS);
    gathering.unref();
  };
  const kick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = reconcile()
      .then(() => {
        // Asked until the first time it holds: no assignment is worked out again per plan after.
        if (joinedNow && !leaving && deferred.size === 0 && holdsShare()) {
          joinedNow();
          joinedNow = undefined;
        }
      })
      .catch((err: unknown) => log.warn(`cluster: ${(err as Error).message}; retrying`))
      .finally(() => {
        running = undefined;
        aimAtExpiry();
        if (again) {
          again = false;
          kick();
        }
      });
  };

  // Silent for failoverMs on our clock: asked once more before it counts as dead, since a busy
  // event loop may not have read its latest heartbeats from the watch yet.
  const confirmSilent = async (now: number) => {
    for (const [who, b] of beats) {
      if (who === id || now - heardAt(b) <= failoverMs) continue;
      const entry = await kv.get(memberKey(who));
      if (!entry || entry.operation !== "PUT") beats.delete(who);
      else if (entry.revision !== b.revision)
        beats.set(who, {
          seenAt: Date.now(),
          revision: entry.revision,
          info: entry.json<MemberInfo>(),
        });
    }
  };

  /** Of `ks`, those the assignment gives another live member now. */
  const assignedElsewhere = (ks: readonly number[]): number[] => {
    const owners = ownersNow();
    return ks.filter((k) => owners[k] !== id);
  };
  /** Leases of ours whose consumers were not opened (waves): read again by the next plan. */
  const deferred = new Set<number>();

  const reconcile = async () => {
    const started = Date.now();
    await confirmSilent(started);
    const now = Date.now();
    const { heartbeats, heard } = heartbeatsAt(beats, id, now, heardAt, failoverMs, leaving);
    heardCount = heard.size;
    const live = liveMembers(heartbeats, now, failoverMs);
    // A member dead for a while leaves the bucket: the first live member by id removes it.
    if (live.map((m) => m.id).sort()[0] === id) {
      for (const [who, b] of beats) {
        if (who !== id && now - heardAt(b) > 4 * failoverMs) {
          beats.delete(who);
          await kv.delete(memberKey(who)).catch(() => undefined);
        }
      }
    }
    const found = await leasesFound();
    const held = new Map<number, string>();
    for (const [k, h] of holders) held.set(k, h.member);
    const plan = planLeases(id, partitions, live, held, heard);
    lastPlan = plan;

    // Partitions someone else took (they judged us dead): stop reading them at once.
    const lost = [...owned].filter((k) => held.get(k) !== id && held.has(k));
    if (lost.length > 0) {
      log.warn(`cluster: partitions ${lost.join(",")} were taken over by another member`);
      for (const k of lost) owned.delete(k);
      await options.release(lost);
    }
    if (plan.release.length > 0) {
      await options.release(plan.release);
      await Promise.all(
        plan.release.map(async (k) => {
          owned.delete(k);
          const h = holders.get(k);
          // On our own lease's revision: a lease someone took meanwhile is theirs to keep.
          const rev = mine.get(k) ?? h?.revision;
          mine.delete(k);
          await kv
            .delete(leaseKey(k), rev === undefined ? {} : { previousSeq: rev })
            .then(() => holders.delete(k))
            // Left to the others' failover: say so, a move that should have been at once.
            .catch((err: unknown) => letGoFailed(k, err));
        }),
      );
      log.info(`cluster: handed over partitions ${plan.release.join(",")}`);
      await beat();
    }
    // A leaving member lets go of everything (the assignment leaves it out) and takes nothing.
    // Leases found ours that the plan keeps are taken with the plan's (the others it released).
    const kept = leaving ? [] : found.filter((k) => !plan.release.includes(k));
    if ((plan.acquire.length > 0 || kept.length > 0) && !leaving) {
      const taken: number[] = [...kept];
      let takeover = false;
      /** The longest silence of a holder taken from, as this member heard it at the start. */
      let silence = 0;
      const writing = Date.now();
      options.prepare?.(plan.acquire);
      await Promise.all(
        plan.acquire.map(async (k) => {
          const value = JSON.stringify({ member: id, since: new Date().toISOString() });
          const h = holders.get(k);
          try {
            let revision: number;
            if (h) {
              revision = await kv.update(leaseKey(k), value, h.revision);
              takeover = true;
              const b = beats.get(h.member);
              if (b) silence = Math.max(silence, started - heardAt(b));
              log.warn(
                `cluster: taking partition ${k} from ${h.member}, silent for over ${failoverMs} ms`,
              );
            } else {
              revision = await kv.create(leaseKey(k), value);
            }
            // Known at once, before the watch says so: the next plan must not see the old holder.
            mine.set(k, revision);
            holders.set(k, { member: id, revision });
            leaseRevisions.set(k, Math.max(leaseRevisions.get(k) ?? 0, revision));
            taken.push(k);
          } catch {
            // Another member was first, or the holder came back: the watch tells.
          }
        }),
      );
      if (taken.length > 0) {
        taken.sort((a, b) => a - b);
        // Alone, a member takes every partition, and members starting with it are heard while
        // it opens them: opened a wave at a time, what is left once one of them is another's is
        // not opened, and the next plan hands those leases over at once (and opens the rest).
        const wave = live.length === 1 && !takeover ? WAVE : taken.length;
        const opened: number[] = [];
        const opening = Date.now();
        for (let i = 0; i < taken.length; i += wave) {
          const rest = taken.slice(i);
          if (opened.length > 0 && (leaving || assignedElsewhere(rest).length > 0)) {
            for (const k of rest) deferred.add(k);
            again = true;
            break;
          }
          const next = rest.slice(0, wave);
          for (const k of next) owned.add(k);
          await options.acquire(next, takeover);
          opened.push(...next);
        }
        // stop() began while these were opening: they go again with everything else.
        if (leaving) again = true;
        // A takeover's steps, timed: where the failover bound goes (docs/scale-out.md).
        const steps = takeover
          ? ` (from a member that died: heard ${silence} ms before, confirmed and planned in ${writing - started} ms, leases written in ${opening - writing} ms, consumers opened and busy threads woken in ${Date.now() - opening} ms)`
          : "";
        log.info(`cluster: took partitions ${opened.join(",")}${steps}`);
        await beat();
      }
    }
  };

  // The watch first delivers every current value, then changes. Nothing is planned before the
  // current values are in (up to the bucket's last revision at start): a member or lease not
  // yet seen would look absent, and its partitions free.
  const bucket = clusterBucket(names);
  const upTo = (await step(`reading stream ${kvStream(bucket)}`, () => kv.status())).streamInfo
    .state.last_seq;
  let initialized = false;
  // Bounded: a watch placed on a replica that is behind is made again (watch-current.ts).
  const { watch, watching } = await watchFromCurrent({
    upTo,
    open: () => step(`watching bucket ${bucket}`, () => kv.watch({ key: ">" })),
    onEntry: (e) => {
      onEntry(e);
      if (initialized && e.key !== memberKey(id)) kickSoon();
    },
    what: `bucket ${bucket}`,
    log: retrying,
    ...(options.watchCatchUpMs === undefined ? {} : { attemptMs: options.watchCatchUpMs }),
  });
  await step(`writing key '${memberKey(id)}' of bucket ${bucket}`, beat);
  initialized = true;
  // Beating from the first plan on: opening its partitions' consumers can outlast the failover
  // time on a loaded cluster, and a member silent meanwhile would have them taken over.
  const timer = setInterval(() => {
    void beat().catch((err: unknown) =>
      log.warn(`cluster: heartbeat failed: ${(err as Error).message}`),
    );
    kick();
  }, beatMs);
  kick();
  // The start line says which partitions it took: the first plan is carried out before return,
  // and partitions others hand over to it are waited for a moment (they drain first).
  for (let i = 0; i < 40; i++) {
    while (running) await running;
    // A change seen meanwhile (our own lease, its reply lost) is planned for first.
    if (gathering) {
      await sleep(GATHER_MS);
      continue;
    }
    if (!lastPlan || lastPlan.waiting.length === 0) break;
    await sleep(50);
  }

  return {
    id,
    owned: () => [...owned].sort((a, b) => a - b),
    heard: () => heardCount,
    joined,
    async leave() {
      if (stopped) return;
      leaving = true;
      await beat().catch(() => undefined);
      kick();
      while (running) await running;
      stopped = true;
      clearInterval(timer);
      clearTimeout(expiry);
      clearTimeout(gathering);
      // Whatever is still held (a failed plan) goes now.
      const rest = [...owned];
      if (rest.length > 0) {
        await options.release(rest);
        await Promise.all(
          rest.map((k) => {
            const rev = mine.get(k);
            return kv
              .delete(leaseKey(k), rev === undefined ? {} : { previousSeq: rev })
              .catch((err: unknown) => letGoFailed(k, err));
          }),
        );
        owned.clear();
      }
      await kv.delete(memberKey(id)).catch(() => undefined);
      watch.stop();
      await watching.catch(() => undefined);
    },
    abandon() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(expiry);
      clearTimeout(gathering);
      watch.stop();
    },
  };
}
