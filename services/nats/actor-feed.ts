import type { InfraNames } from "../config/names.ts";

/**
 * The actor feed: what thread workers tell the explorer (/ui/) about their thread actors, over
 * core NATS (nothing stored). A worker keeps each live actor's state and its last transitions;
 * it answers every `states` request with those of its threads it holds, and publishes each state change of a
 * thread on `feed.<thread>` only while an explorer says, on `watch`, that it shows that thread.
 */
export interface ActorFeedSubjects {
  /** `<apiPrefix>.actors.feed.<thread>`: one ActorTransition per state change (watched only). */
  feed(thread: string): string;
  /** `<apiPrefix>.actors.states`: ActorStatesRequest → one ActorStatesReply per worker. */
  readonly states: string;
  /** `<apiPrefix>.actors.watch`: WatchNotice, repeated by the explorer while a page is open. */
  readonly watch: string;
}

export function actorFeedSubjects(names: Pick<InfraNames, "apiPrefix">): ActorFeedSubjects {
  const base = `${names.apiPrefix}.actors`;
  return {
    feed: (thread) => `${base}.feed.${thread}`,
    states: `${base}.states`,
    watch: `${base}.watch`,
  };
}

/** One change of an actor's state (its value, flattened: `active.idle`), or its stop. */
export interface ActorTransition {
  thread: string;
  /** Epoch milliseconds. */
  at: number;
  /** The state before, `(new)` for an actor's first snapshot. */
  from: string;
  /** The event that caused it (`xstate.init` at start, `xstate.stop` when stopped). */
  event: string;
  /** The state after, `(stopped)` once the actor stopped (passivated, drained, deleted). */
  to: string;
  /** The thread after it, when the actor's context says: messages, boundary, outline lines. */
  count?: number;
  boundary?: number;
  lines?: number;
}

/** What one worker knows of one live actor. */
export interface ActorReport {
  thread: string;
  /** The worker: its member id when partitioned (as GET /cluster names it), else `host:pid`. */
  worker: string;
  state: string;
  /** When it entered that state (epoch ms). */
  since: number;
  /** Oldest first; only when asked for (`transitions: true`). */
  transitions?: ActorTransition[];
}

export interface ActorStatesRequest {
  threads: string[];
  transitions?: boolean;
}

export interface ActorStatesReply {
  worker: string;
  /** Those of the asked threads this worker holds live; empty if none. */
  actors: ActorReport[];
  /** How many workers may hold threads, as this one's membership sees it (partitioned only). */
  workers?: number;
}

export interface WatchNotice {
  threads: string[];
  /** How long the notice holds; the explorer repeats it well before. */
  ttlMs: number;
}

/** Most threads one states request or watch notice may name. */
export const MAX_FEED_THREADS = 500;
