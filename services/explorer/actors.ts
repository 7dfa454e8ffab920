import { createInbox, type NatsConnection } from "@nats-io/transport-node";
import type { InfraNames } from "../config/names.ts";
import {
  actorFeedSubjects,
  MAX_FEED_THREADS,
  type ActorReport,
  type ActorStatesReply,
  type ActorTransition,
  type WatchNotice,
} from "../nats/actor-feed.ts";

/** How long a states request waits for workers: threads not answered by then are not live. */
export const STATES_WAIT_MS = 250;
/**
 * Single mode (no worker says how many there are): the wait ends this long after the last
 * answer, since another worker sharing the durable answers about as soon.
 */
export const STATES_QUIET_MS = 40;
/** How often the explorer repeats its watch notice, and how long each holds. */
export const WATCH_EVERY_MS = 5_000;
const WATCH_TTL_MS = 3 * WATCH_EVERY_MS;

/** The explorer's side of the actor feed (services/nats/actor-feed.ts). */
export interface ActorStates {
  /**
   * What workers say of these threads' live actors. A thread missing from the answer has no
   * live actor (passivated, never loaded, or no worker runs). Ends as soon as every thread has
   * an answer or every worker has answered (partitioned: as many as they say there are; single
   * mode: none more within STATES_QUIET_MS), else after `waitMs`.
   */
  states(
    threads: readonly string[],
    options?: { transitions?: boolean; waitMs?: number },
  ): Promise<Map<string, ActorReport>>;
  /** Each state change of `thread`'s actor, while subscribed; the watch notice is kept up. */
  follow(thread: string, onTransition: (t: ActorTransition) => void): () => void;
  close(): void;
}

function parseReply(data: Uint8Array): ActorStatesReply | undefined {
  try {
    const body = JSON.parse(new TextDecoder().decode(data)) as Partial<ActorStatesReply>;
    return Array.isArray(body.actors) && typeof body.worker === "string"
      ? (body as ActorStatesReply)
      : undefined;
  } catch {
    return undefined;
  }
}

const newest = (r: ActorReport): number => r.transitions?.at(-1)?.at ?? r.since;

export function actorStates(nc: NatsConnection, names: Pick<InfraNames, "apiPrefix">): ActorStates {
  const subjects = actorFeedSubjects(names);
  const followers = new Map<string, Set<(t: ActorTransition) => void>>();
  const subs = new Map<string, { unsubscribe(): void }>();
  let timer: NodeJS.Timeout | undefined;

  const notify = () => {
    const threads = [...followers.keys()];
    for (let i = 0; i < threads.length; i += MAX_FEED_THREADS) {
      const notice: WatchNotice = {
        threads: threads.slice(i, i + MAX_FEED_THREADS),
        ttlMs: WATCH_TTL_MS,
      };
      try {
        nc.publish(subjects.watch, JSON.stringify(notice));
      } catch {
        // A closed connection: the pages' streams end with it.
      }
    }
  };

  return {
    async states(threads, options = {}) {
      const wanted = new Set(threads.slice(0, MAX_FEED_THREADS));
      const found = new Map<string, ActorReport>();
      if (wanted.size === 0 || nc.isClosed()) return found;
      const inbox = createInbox();
      const answered = new Set<string>();
      let workers = 0;
      await new Promise<void>((resolve) => {
        let quiet: NodeJS.Timeout | undefined;
        const sub = nc.subscribe(inbox, {
          callback: (err, msg) => {
            if (err) return;
            const reply = parseReply(msg.data);
            if (!reply) return;
            answered.add(reply.worker);
            if (typeof reply.workers === "number") workers = Math.max(workers, reply.workers);
            for (const report of reply.actors) {
              if (!wanted.has(report.thread)) continue;
              // Two workers during a hand-over: the one that changed last is the owner now.
              const known = found.get(report.thread);
              if (!known || newest(report) >= newest(known)) found.set(report.thread, report);
            }
            if (found.size === wanted.size || (workers > 0 && answered.size >= workers)) done();
            else if (workers === 0) {
              clearTimeout(quiet);
              quiet = setTimeout(done, STATES_QUIET_MS);
            }
          },
        });
        const wait = setTimeout(done, options.waitMs ?? STATES_WAIT_MS);
        function done() {
          clearTimeout(wait);
          clearTimeout(quiet);
          sub.unsubscribe();
          resolve();
        }
        nc.publish(
          subjects.states,
          JSON.stringify({ threads: [...wanted], transitions: options.transitions === true }),
          { reply: inbox },
        );
      });
      return found;
    },

    follow(thread, onTransition) {
      let set = followers.get(thread);
      if (!set) {
        set = new Set();
        followers.set(thread, set);
        const listeners = set;
        subs.set(
          thread,
          nc.subscribe(subjects.feed(thread), {
            callback: (err, msg) => {
              if (err) return;
              let t: ActorTransition;
              try {
                t = msg.json<ActorTransition>();
              } catch {
                return;
              }
              for (const listener of listeners) listener(t);
            },
          }),
        );
        // A new thread is told at once; the rest at the next beat.
        notify();
        timer ??= setInterval(notify, WATCH_EVERY_MS);
      }
      set.add(onTransition);
      return () => {
        const current = followers.get(thread);
        if (!current?.delete(onTransition) || current.size > 0) return;
        followers.delete(thread);
        subs.get(thread)?.unsubscribe();
        subs.delete(thread);
        if (followers.size === 0 && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      };
    },

    close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      for (const sub of subs.values()) sub.unsubscribe();
      subs.clear();
      followers.clear();
    },
  };
}
