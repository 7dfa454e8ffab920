import { createActor } from "xstate";
import { afterEach, describe, expect, it } from "vitest";
import { threadMachine } from "../machines/thread.ts";
import {
  actorFeedSubjects,
  type ActorStatesReply,
  type ActorTransition,
} from "../services/nats/actor-feed.ts";
import { actorStates, STATES_QUIET_MS } from "../services/explorer/actors.ts";
import { startActorFeed, KEPT_TRANSITIONS } from "../services/thread-worker/actor-feed.ts";
import { stateName } from "../machines/state-name.ts";
import { parseSettings } from "../shared/settings.ts";
import { makeMessage } from "./support/conversation.ts";
import { chatMessage, publishMessage, waitFor, waitSettled } from "./support/thread-worker.ts";
import { workerScope } from "./support/worker-scope.ts";

// The actor feed between workers and the explorer, over the run's nats-server: what a worker
// keeps of each live actor (its state changes, from XState's inspection), what it answers, and
// that it publishes a thread's changes only while an explorer watches that thread.

const scope = workerScope();
const settings = parseSettings({
  HISTORY_LINE: "64",
  HISTORY_TAIL: "20,40",
  HISTORY_OUTLINE: "2000,4000",
});
const stops: (() => void)[] = [];
/**
 * How long a states request may wait for a worker that holds the thread: it ends at the answer,
 * so this is only a bound. The default (250 ms, what a page waits) is too short on a loaded
 * machine, where an answer missing by then reads as "no live actor".
 */
const ANSWERED = { waitMs: 15_000 };
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** A thread actor observed by a feed on its own connection, and the states its value took. */
async function observed(thread: string) {
  const { nc, h } = await scope.setup(`feed-${thread}`);
  const feed = startActorFeed(nc, h.names);
  stops.push(() => feed.stop());
  // The feed's subscriptions reach the server before any request from another connection.
  await nc.flush();
  const actor = createActor(threadMachine, { input: { thread, settings }, inspect: feed.inspect });
  const values: string[] = [];
  const counts: number[] = [];
  actor.subscribe((s) => {
    const v = stateName(s.value);
    if (values.at(-1) === v) return;
    values.push(v);
    counts.push(s.context.core.count);
  });
  actor.start();
  stops.push(() => actor.stop());
  const explorer = actorStates(await scope.connect(`explorer-${thread}`), h.names);
  stops.push(() => explorer.close());
  const send = (i: number) =>
    actor.send({
      type: "message.created",
      message: makeMessage(thread, i, "word ".repeat(40)),
      seq: i + 1,
    });
  return { nc, h, feed, actor, values, counts, explorer, send };
}

describe("the actor feed", () => {
  it("keeps each state change of a live actor and answers for it", async () => {
    const { feed, actor, values, counts, explorer, send } = await observed("feed-a");
    for (let i = 0; i < 4; i++) send(i);
    const report = (await explorer.states(["feed-a"], { transitions: true, ...ANSWERED })).get(
      "feed-a",
    );
    expect(report?.state).toBe(stateName(actor.getSnapshot().value));
    const changes = report?.transitions ?? [];
    // The states the actor went through, in order, each once per change, from its first.
    expect(changes.map((t) => t.to)).toEqual(values);
    expect(changes[0]).toMatchObject({ from: "(new)", event: "xstate.init", thread: "feed-a" });
    for (const [i, t] of changes.entries()) if (i > 0) expect(t.from).toBe(changes[i - 1]?.to);
    expect(changes.map((t) => t.count)).toEqual(counts);
    // A thread no worker holds is not answered.
    expect((await explorer.states(["nobody"], { waitMs: 100 })).size).toBe(0);
    // A member of a partitioned cluster goes by its member id, as GET /cluster shows it.
    expect(report?.worker).toMatch(/^[^:]+:\d+$/);
    feed.asMember("host-1-a2f3", () => 1);
    const named = (await explorer.states(["feed-a"], ANSWERED)).get("feed-a");
    expect(named?.worker).toBe("host-1-a2f3");
  });

  it("keeps the last few transitions only", async () => {
    const { values, explorer, send, actor } = await observed("feed-b");
    for (let i = 0; i < 40; i++) {
      send(i);
      const jobs = actor.getSnapshot().context.core.inflight;
      for (const ref of jobs)
        actor.send({ type: "summary.built", ...ref, text: `s${ref.level}:${ref.index}` });
    }
    const report = (await explorer.states(["feed-b"], { transitions: true, ...ANSWERED })).get(
      "feed-b",
    );
    expect(report?.transitions).toBeDefined();
    // 40 messages and their summaries made more changes than are kept: the newest are.
    expect(values.length).toBeGreaterThan(KEPT_TRANSITIONS);
    expect(report?.transitions?.map((t) => t.to)).toEqual(values.slice(-KEPT_TRANSITIONS));
    expect(report?.transitions?.at(-1)?.to).toBe(stateName(actor.getSnapshot().value));
  });

  it("publishes a thread's changes only while an explorer watches it", async () => {
    const { nc, h, actor, values, explorer, send } = await observed("feed-c");
    const heard: ActorTransition[] = [];
    const raw = nc.subscribe(actorFeedSubjects(h.names).feed("feed-c"), {
      callback: (_, msg) => void heard.push(msg.json<ActorTransition>()),
    });
    stops.push(() => raw.unsubscribe());
    send(0);
    send(1);
    // A transition published by the feed would reach `raw` (same connection) before the flush's
    // answer: the server handles a connection's messages in order.
    await nc.flush();
    expect(values.length).toBeGreaterThan(1);
    expect(heard).toEqual([]);

    const followed: ActorTransition[] = [];
    const unfollow = explorer.follow("feed-c", (t) => followed.push(t));
    stops.push(unfollow);
    // A states request sent after the notice is answered after the worker took the notice (one
    // connection each way, messages in order).
    expect((await explorer.states(["feed-c"], ANSWERED)).size).toBe(1);
    const before = values.length;
    for (const ref of actor.getSnapshot().context.core.inflight) {
      actor.send({ type: "summary.built", ...ref, text: `s${ref.level}:${ref.index}` });
    }
    send(2);
    await waitFor(
      "the changes since the watch",
      () => followed.length === values.length - before,
      5_000,
    );
    expect(followed.map((t) => t.to)).toEqual(values.slice(before));
    expect(heard.map((t) => t.to)).toEqual(values.slice(before));

    actor.stop();
    await waitFor("the stop", () => followed.at(-1)?.to === "(stopped)", 5_000);
    expect((await explorer.states(["feed-c"], { waitMs: 100 })).size).toBe(0);
  });

  it("shows a worker's thread actors as the worker runs them", async () => {
    const { h } = await scope.setup("feed-worker");
    await scope.start(h);
    for (let i = 0; i < 30; i++) await publishMessage(h, chatMessage("feed-w", i));
    await waitSettled(h, ["feed-w"]);
    const explorer = actorStates(await scope.connect("feed-explorer"), h.names);
    stops.push(() => explorer.close());
    const report = (await explorer.states(["feed-w"], { transitions: true, ...ANSWERED })).get(
      "feed-w",
    );
    expect(report?.state).toBe("slot.open,thread.active.idle");
    expect(report?.transitions?.at(-1)).toMatchObject({
      to: "slot.open,thread.active.idle",
      count: 30,
    });
  });

  it("stops waiting once every worker has answered, even for threads none holds", async () => {
    // Single mode: the one worker answers "none of these", and no other answers after it.
    const { h, feed: single, explorer } = await observed("feed-d");
    let t0 = performance.now();
    expect((await explorer.states(["nobody"], { waitMs: 15_000 })).size).toBe(0);
    // Not the 15 s bound: the answer ended it.
    expect(performance.now() - t0).toBeLessThan(5_000);

    // Partitioned: two workers, each saying there are two; a thread held by the slower one.
    const { nc: second } = await scope.setup("feed-d-second");
    const slow = second.subscribe(actorFeedSubjects(h.names).states, {
      callback: (_, msg) => {
        const reply: ActorStatesReply = {
          worker: "slow:1",
          actors: [
            {
              thread: "held-late",
              worker: "slow:1",
              state: "slot.open,thread.active.idle",
              since: 1,
            },
          ],
          workers: 2,
        };
        // Later than single mode's quiet time: found only because the count says to wait.
        setTimeout(() => msg.respond(JSON.stringify(reply)), STATES_QUIET_MS * 4);
      },
    });
    stops.push(() => slow.unsubscribe());
    await second.flush();
    const { nc: third } = await scope.setup("feed-d-third");
    const feed = startActorFeed(third, h.names);
    feed.asMember("member-1", () => 2);
    stops.push(() => feed.stop());
    await third.flush();
    // The first feed (single mode, above) would answer too: stopped, so two answer in all.
    single.stop();
    t0 = performance.now();
    const found = await explorer.states(["held-late", "nobody"], { waitMs: 15_000 });
    expect([...found.keys()]).toEqual(["held-late"]);
    expect(performance.now() - t0).toBeLessThan(5_000);

    // A member the count names but that never answers: the wait runs to its bound.
    feed.asMember("member-1", () => 3);
    t0 = performance.now();
    expect([...(await explorer.states(["held-late", "nobody"], { waitMs: 300 })).keys()]).toEqual([
      "held-late",
    ]);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
  });
});
