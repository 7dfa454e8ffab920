import { hostname } from "node:os";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { InspectionEvent } from "xstate";
import type { InfraNames } from "../config/names.ts";
import {
  actorFeedSubjects,
  MAX_FEED_THREADS,
  type ActorReport,
  type ActorStatesReply,
  type ActorStatesRequest,
  type ActorTransition,
  type WatchNotice,
} from "../nats/actor-feed.ts";
import type { Logger } from "./log.ts";
import { isState, stateName } from "../../machines/state-name.ts";

/** Transitions kept per live actor: enough to read what it did last, a few hundred bytes. */
export const KEPT_TRANSITIONS = 12;
/** Longest a watch notice holds, whatever it asks (the explorer repeats it every few seconds). */
const MAX_WATCH_MS = 60_000;

/** What the feed reads of an actor's snapshot. */
export interface FedSnapshot {
  value?: unknown;
  status?: string;
  context?: unknown;
}

export interface ActorFeed {
  /** An actor's `inspect` option: passes every event on to `inner`, keeps state changes. */
  inspect: (event: InspectionEvent) => void;
  /**
   * The same from the actor's host, after each event it sent (`event`: its type): no XState
   * inspection event is made per action and microstep, which the worker's actors skip this way.
   */
  report: (actor: object, snapshot: FedSnapshot, event: string) => void;
  /**
   * Partitioned: the worker is named by its member id (as GET /cluster names it), and every
   * answer tells how many workers may hold threads (the live members), so the explorer stops
   * waiting once each has answered. Single mode: `host:pid`, and no count.
   */
  asMember(id: string, count: () => number): void;
  stop(): void;
}

interface Kept {
  thread: string;
  state: string;
  since: number;
  transitions: ActorTransition[];
}

const numberOf = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/** The thread and its position, from the machine's context (`core`, or flat). */
function facts(context: unknown): Partial<ActorTransition> {
  const c = (context ?? {}) as Record<string, unknown>;
  const core = (typeof c.core === "object" && c.core !== null ? c.core : c) as Record<
    string,
    unknown
  >;
  const out: Partial<ActorTransition> = {};
  if (typeof core.thread === "string") out.thread = core.thread;
  const count = numberOf(core.count);
  const boundary = numberOf(core.boundary);
  if (count !== undefined) out.count = count;
  if (boundary !== undefined) out.boundary = boundary;
  if (Array.isArray(core.outline)) out.lines = core.outline.length;
  return out;
}

/**
 * The facts with the transition's fields, as `{ ...known, thread, at, from, event, to }` makes it
 * (same keys, same order) but on `known` itself: in Node 20's V8 a property added to a spread copy
 * takes a slow path (~3 µs and a new hidden class each time), and this runs at most state changes.
 */
function transitionOf(
  known: Partial<ActorTransition>,
  thread: string,
  at: number,
  from: string,
  event: string,
  to: string,
): ActorTransition {
  return Object.assign(known, { thread, at, from, event, to });
}

function threadsOf(msg: Msg): string[] {
  try {
    const body = msg.json<Partial<ActorStatesRequest>>();
    return Array.isArray(body.threads)
      ? body.threads.filter((t): t is string => typeof t === "string").slice(0, MAX_FEED_THREADS)
      : [];
  } catch {
    return [];
  }
}

/**
 * The worker's side of the actor feed (services/nats/actor-feed.ts). XState's inspection events
 * reach it for every thread actor; it keeps only the root actor's state changes (a comparison of
 * one string per snapshot), the last few per live actor, and forgets an actor when it stops.
 * Nothing is published unless an explorer watches the thread: while nobody looks, the cost is
 * that comparison and a short array per live actor.
 */
export function startActorFeed(
  nc: NatsConnection,
  names: Pick<InfraNames, "apiPrefix">,
  options: { inner?: ((event: InspectionEvent) => void) | undefined; log?: Logger } = {},
): ActorFeed {
  const subjects = actorFeedSubjects(names);
  let worker = `${hostname()}:${process.pid}`;
  const byActor = new Map<object, Kept>();
  const byThread = new Map<string, Kept>();
  const watched = new Map<string, number>();
  const inner = options.inner;
  let warned = false;
  const warnOnce = (what: string, err: unknown) => {
    if (warned) return;
    warned = true;
    options.log?.warn(
      `actor feed: ${what}: ${(err as Error).message}; the explorer (/ui/) will not show actor states from this worker (check the NATS user may use ${names.apiPrefix}.actors.>)`,
    );
  };

  const isWatched = (thread: string, now: number): boolean => {
    if (watched.size === 0) return false;
    const until = watched.get(thread);
    if (until === undefined) return false;
    if (until >= now) return true;
    watched.delete(thread);
    return false;
  };

  const record = (kept: Kept, transition: ActorTransition) => {
    kept.transitions.push(transition);
    if (kept.transitions.length > KEPT_TRANSITIONS) kept.transitions.shift();
    kept.state = transition.to;
    kept.since = transition.at;
    if (!isWatched(kept.thread, transition.at)) return;
    try {
      nc.publish(subjects.feed(kept.thread), JSON.stringify(transition));
    } catch (err) {
      warnOnce("publishing a transition failed", err);
    }
  };

  const observe = (actor: object, snapshot: FedSnapshot, eventType: string, fallback: string) => {
    let kept = byActor.get(actor);
    if (snapshot.status !== "active") {
      if (!kept) return;
      const at = Date.now();
      record(
        kept,
        transitionOf(facts(snapshot.context), kept.thread, at, kept.state, eventType, "(stopped)"),
      );
      byActor.delete(actor);
      if (byThread.get(kept.thread) === kept) byThread.delete(kept.thread);
      return;
    }
    // Most events leave the state as it was: compared without building its name.
    if (kept && isState(snapshot.value, kept.state)) return;
    const to = stateName(snapshot.value);
    const known = facts(snapshot.context);
    const at = Date.now();
    if (!kept) {
      const thread = known.thread ?? fallback;
      kept = { thread, state: "(new)", since: at, transitions: [] };
      byActor.set(actor, kept);
      byThread.set(thread, kept);
    }
    record(kept, transitionOf(known, kept.thread, at, kept.state, eventType, to));
  };

  const report = (kept: Kept, withTransitions: boolean): ActorReport => ({
    thread: kept.thread,
    worker,
    state: kept.state,
    since: kept.since,
    ...(withTransitions ? { transitions: kept.transitions.slice() } : {}),
  });

  const subs: Subscription[] = [];
  const subscribe = (subject: string, handle: (msg: Msg) => void) => {
    try {
      subs.push(
        nc.subscribe(subject, {
          callback: (err, msg) => {
            if (err) warnOnce(`the subscription to ${subject} failed`, err);
            else handle(msg);
          },
        }),
      );
    } catch (err) {
      warnOnce(`cannot subscribe to ${subject}`, err);
    }
  };

  let workers: (() => number) | undefined;
  // Every worker hears a states request and answers, with no actors if it holds none of them:
  // an explorer that knows how many workers there are ends its wait at the last answer.
  subscribe(subjects.states, (msg) => {
    if (!msg.reply) return;
    let transitions = false;
    try {
      transitions = msg.json<Partial<ActorStatesRequest>>().transitions === true;
    } catch {
      return;
    }
    const actors: ActorReport[] = [];
    for (const thread of threadsOf(msg)) {
      const kept = byThread.get(thread);
      if (kept) actors.push(report(kept, transitions));
    }
    const reply: ActorStatesReply = {
      worker,
      actors,
      ...(workers === undefined ? {} : { workers: workers() }),
    };
    msg.respond(JSON.stringify(reply));
  });

  subscribe(subjects.watch, (msg) => {
    let ttl: number;
    try {
      ttl = Number(msg.json<Partial<WatchNotice>>().ttlMs);
    } catch {
      return;
    }
    if (!Number.isFinite(ttl) || ttl <= 0) return;
    const until = Date.now() + Math.min(ttl, MAX_WATCH_MS);
    for (const thread of threadsOf(msg)) watched.set(thread, until);
    // Expired notices of threads nobody looks at any more go at the next notice.
    const now = Date.now();
    for (const [thread, t] of watched) if (t < now) watched.delete(thread);
  });

  return {
    inspect: (event) => {
      inner?.(event);
      // Only the thread actor itself (a machine's invoked children have their own snapshots).
      if (event.type !== "@xstate.snapshot" || event.actorRef.sessionId !== event.rootId) return;
      const ref = event.actorRef;
      observe(ref, event.snapshot, event.event.type, ref.sessionId);
    },
    report: (actor, snapshot, event) => observe(actor, snapshot, event, "?"),
    asMember: (id, count) => {
      worker = id;
      workers = count;
    },
    stop: () => {
      for (const sub of subs) sub.unsubscribe();
      subs.length = 0;
    },
  };
}
