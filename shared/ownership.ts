/**
 * Which instance owns which partition of the threads (SPEC §9). Pure: every instance computes
 * the same answer from the same member list, so no coordinator is needed; leases in KV only
 * make sure a partition is taken after its last owner let it go (services/cluster/).
 */

/** An instance as the assignment sees it: its id and how many shares of the work it takes. */
export interface Member {
  id: string;
  /** Shares of the partitions it takes relative to the others; 1 by default. */
  capacity?: number;
}

/**
 * The partition of a thread, as nats-server's `{{partition(n,1)}}` mapping computes it: FNV-1a
 * (32 bits) of the thread token, modulo n. A thread id is ASCII (`[A-Za-z0-9_-]`), so its
 * UTF-16 code units are its bytes.
 */
export function partitionOf(thread: string, partitions: number): number {
  return fnv1a(thread) % partitions;
}

function fnv1a(token: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) {
    h ^= token.charCodeAt(i) & 0xff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

// A partition's preference for a member: FNV-1a of both, then murmur3's finaliser so nearby
// partition numbers give unrelated orders.
function score(member: string, partition: number): number {
  let h = 0x811c9dc5;
  const key = `${member}\u0000${partition}`;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return (h >>> 0) + 1;
}

/** Weighted rendezvous score: -w / ln(u), u uniform in (0, 1]; higher wins. */
function weighted(member: Member, partition: number): number {
  const u = score(member.id, partition) / 4294967297;
  return -(member.capacity ?? 1) / Math.log(u);
}

export class OwnershipError extends Error {
  override readonly name = "OwnershipError";
}

function checkInput(partitions: number, members: readonly Member[]): void {
  if (!Number.isSafeInteger(partitions) || partitions < 1)
    throw new OwnershipError(`partitions must be a whole number ≥ 1, got ${partitions}`);
  const seen = new Set<string>();
  for (const m of members) {
    if (seen.has(m.id)) throw new OwnershipError(`member '${m.id}' is listed twice`);
    seen.add(m.id);
    const c = m.capacity ?? 1;
    if (!Number.isFinite(c) || c <= 0)
      throw new OwnershipError(`member '${m.id}' has capacity ${c}; it must be above 0`);
  }
}

/**
 * The owner of each partition (index = partition), or an empty list without members.
 * Rendezvous hashing bounded by capacity: a partition goes to the member that ranks it highest
 * among those not yet full. A member's quota is its share of the partitions rounded down, plus
 * one while the rounded-off remainder lasts (a cap of the share rounded up alone let the first
 * members fill up and left the last one a partition: 6 × 6 and 1 of 37). So each partition has
 * exactly one owner, every member is within one partition of its share, the answer does not
 * depend on the order of `members`, and a join or leave moves few partitions (about the share of
 * the member that came or went; see test/ownership.unit.test.ts for the bound).
 */
export function assignPartitions(partitions: number, members: readonly Member[]): string[] {
  checkInput(partitions, members);
  if (members.length === 0) return [];
  const sorted = [...members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const total = sorted.reduce((sum, m) => sum + (m.capacity ?? 1), 0);
  const room = new Map(
    sorted.map((m) => [m.id, Math.floor((partitions * (m.capacity ?? 1)) / total)] as const),
  );
  // The partitions the rounding down left over: one more each for the members that reach them.
  let extra = partitions - [...room.values()].reduce((sum, r) => sum + r, 0);
  const tookExtra = new Set<string>();
  // Every (partition, member) pair by score, best first; each partition takes the best member
  // that still has room. Ties (never in practice) break by partition then id, so it stays pure.
  const pairs: { p: number; id: string; s: number }[] = [];
  for (let p = 0; p < partitions; p++)
    for (const m of sorted) pairs.push({ p, id: m.id, s: weighted(m, p) });
  pairs.sort((a, b) => b.s - a.s || a.p - b.p || (a.id < b.id ? -1 : 1));
  const owners: (string | undefined)[] = new Array<string | undefined>(partitions).fill(undefined);
  let left = partitions;
  for (const { p, id } of pairs) {
    if (left === 0) break;
    if (owners[p] !== undefined) continue;
    const r = room.get(id) ?? 0;
    if (r > 0) room.set(id, r - 1);
    else if (extra > 0 && !tookExtra.has(id)) {
      extra--;
      tookExtra.add(id);
    } else continue;
    owners[p] = id;
    left--;
  }
  return owners as string[];
}

/** The partitions `member` owns in an assignment, ascending. */
export function partitionsOf(owners: readonly string[], member: string): number[] {
  const mine: number[] = [];
  owners.forEach((owner, p) => {
    if (owner === member) mine.push(p);
  });
  return mine;
}

/** A member's heartbeat as stored: when the store last heard from it. */
export interface Heartbeat {
  id: string;
  capacity?: number;
  /** Milliseconds, on the store's clock (the KV entry's time), of the last heartbeat. */
  at: number;
  /** Set by a member that is stopping: it takes nothing new and hands its partitions over. */
  leaving?: boolean;
}

/** Members heard from within `failoverMs` of `now` and not leaving, by id. */
export function liveMembers(
  beats: readonly Heartbeat[],
  now: number,
  failoverMs: number,
): Member[] {
  return beats
    .filter((b) => !b.leaving && now - b.at <= failoverMs)
    .map((b) => ({ id: b.id, ...(b.capacity === undefined ? {} : { capacity: b.capacity }) }));
}

/** What one member does next with its leases. */
export interface LeasePlan {
  /** Partitions assigned to it whose lease is free (or held by a member no longer live). */
  acquire: number[];
  /** Partitions it holds that are assigned to another live member: drain, then let go. */
  release: number[];
  /** Partitions assigned to it still held by another live member: it waits for their release. */
  waiting: number[];
}

/**
 * The next step for `me`, given the live members and who holds each lease (partition → member).
 * A partition is taken only once its lease is free or its holder is gone, and a holder lets go
 * only when the partition belongs elsewhere: so at most one live member holds each partition.
 * `heard`: members still heard from, leaving ones included (default: the live ones); a leaving
 * member owns nothing in the assignment but keeps its leases until it has drained and let go.
 */
export function planLeases(
  me: string,
  partitions: number,
  live: readonly Member[],
  holders: ReadonlyMap<number, string>,
  heard: ReadonlySet<string> = new Set(live.map((m) => m.id)),
): LeasePlan {
  const owners = assignPartitions(partitions, live);
  const isLive = heard;
  const plan: LeasePlan = { acquire: [], release: [], waiting: [] };
  for (let p = 0; p < partitions; p++) {
    const owner = owners[p];
    const holder = holders.get(p);
    if (owner === me) {
      if (holder === undefined || !isLive.has(holder)) plan.acquire.push(p);
      else if (holder !== me) plan.waiting.push(p);
    } else if (holder === me) {
      plan.release.push(p);
    }
  }
  return plan;
}

/**
 * Thread tokens whose partitions tell every count from 1 to 4,096 apart: the partitions a
 * server's `{{partition(N,1)}}` mapping gives these tokens name its N (`partitionCountOf`).
 * Chosen by search; `test/ownership.unit.test.ts` checks that no two counts give the same.
 */
export const PARTITION_PROBES: readonly string[] = [
  "outline-partitions-probe-7f",
  "outline-partitions-probe-30",
  "outline-partitions-probe-3y",
  "outline-partitions-probe-9i",
  "outline-partitions-probe-83",
  "outline-partitions-probe-7x",
  "outline-partitions-probe-12",
];

/**
 * The partition count N (1 ≤ N ≤ max) under which each token of `seen` has the partition it
 * maps to, or undefined when none fits (another mapping than `partition(N,1)` of its token).
 */
export function partitionCountOf(
  seen: ReadonlyMap<string, number>,
  max: number,
): number | undefined {
  const hashed = [...seen].map(([token, k]) => [fnv1a(token), k] as const);
  for (let n = 1; n <= max; n++) if (hashed.every(([h, k]) => h % n === k)) return n;
  return undefined;
}
