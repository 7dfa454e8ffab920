// How much the actor feed's inspect observer adds per event: one thread actor, N messages,
// with and without it, interleaved rounds.
import { createActor } from "xstate";
import { threadMachine } from "./machines/thread.ts";
import { parseSettings } from "./shared/settings.ts";
import { startActorFeed } from "./services/thread-worker/actor-feed.ts";
import { makeMessage } from "./test/support/conversation.ts";
const settings = parseSettings({});
const N = Number(process.env.N ?? 2_000);
const fakeNc = { subscribe: () => ({ unsubscribe() {} }), publish() {} } as never;
function run(withFeed: boolean): number {
  const feed = withFeed ? startActorFeed(fakeNc, { apiPrefix: "x" }) : undefined;
  const actor = createActor(threadMachine, { input: { thread: "t", settings }, ...(feed ? { inspect: feed.inspect } : {}) });
  actor.start();
  const msgs = Array.from({ length: N }, (_, i) => makeMessage("t", i, "short text " + i));
  const t = performance.now();
  for (let i = 0; i < N; i++) {
    actor.send({ type: "message.created", message: msgs[i]!, seq: i + 1 });
    for (const ref of actor.getSnapshot().context.core.inflight) actor.send({ type: "summary.built", ...ref, text: "s" });
  }
  const ms = performance.now() - t;
  actor.stop();
  return ms;
}
const a: number[] = [], b: number[] = [];
for (let r = 0; r < Number(process.env.R ?? 5); r++) { a.push(run(false)); b.push(run(true)); }
a.sort((x, y) => x - y); b.sort((x, y) => x - y);
console.log(`without ${a.map((x) => x.toFixed(0)).join(",")} ms; with ${b.map((x) => x.toFixed(0)).join(",")} ms; per event +${(((b[2]! - a[2]!) / N) * 1000).toFixed(2)} us (medians)`);
