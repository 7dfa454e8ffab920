import { readFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import {
  BuilderProcess,
  expectMatchesCleanRun,
  killAll,
  ownHarness,
  spawnWorker,
  startOwnNats,
  type OwnNats,
} from "./faults/support.ts";
import {
  chatMessage,
  publishMessage,
  publishRaw,
  SMALL,
  waitFor,
  waitSettled,
  type Harness,
} from "./support/thread-worker.ts";
import { START_DEADLINE_MS } from "./support/service-process.ts";
import { workerEnv, type WorkerProcess } from "./support/worker-process.ts";
import { freePort } from "../services/util/processes.ts";

// The services as deployed with nats/nats-server.conf: each connects as its own user with only
// its subjects, and does its whole job (topology, consume, summaries, snapshots, metrics, prompts)
// without one permission violation. Messages carry a planted secret; no service may print it (nor
// a password) at info level.

const passwords = {
  OUTLINE_WORKER_PASSWORD: "worker-pw-3f9a61c2",
  OUTLINE_BUILDER_PASSWORD: "builder-pw-77d0e4b5",
  OUTLINE_PLATFORM_PASSWORD: "platform-pw-a8c2d913",
};
const SECRET = "SECRET-launch-code-4417-zebra";

let nats: OwnNats;
let platform: Harness;
let reader: Harness;
let worker: WorkerProcess;
let builder: BuilderProcess;
const processes: (WorkerProcess | BuilderProcess)[] = [];

beforeAll(async () => {
  nats = await startOwnNats({
    configFile: join(process.cwd(), "nats/nats-server.conf"),
    env: { ...process.env, ...passwords },
  });
  // The worker creates the topology as its own user; the platform only publishes.
  worker = spawnWorker(nats.url, DEFAULT_NAMES, SMALL, {
    NATS_USER: "thread-worker",
    NATS_PASSWORD: passwords.OUTLINE_WORKER_PASSWORD,
  });
  processes.push(worker);
  await worker.ready();
  builder = await BuilderProcess.start(nats.url, DEFAULT_NAMES, SMALL, {
    NATS_USER: "prompt-builder",
    NATS_PASSWORD: passwords.OUTLINE_BUILDER_PASSWORD,
  });
  processes.push(builder);
  // Reads (snapshots, HISTORY) as the worker user; publishes as the platform, which may only
  // publish chat events.
  reader = await ownHarness(nats.url, DEFAULT_NAMES, {
    user: "thread-worker",
    password: passwords.OUTLINE_WORKER_PASSWORD,
  });
  const platformNc = await connectNats({
    url: nats.url,
    name: "platform",
    auth: { kind: "user", user: "platform", password: passwords.OUTLINE_PLATFORM_PASSWORD },
  });
  platform = { ...reader, nc: platformNc, js: jetstream(platformNc) };
}, 60_000);

afterAll(async () => {
  await killAll(processes);
  await platform?.nc.close();
  await reader?.nc.close();
  await nats?.stop();
});

describe("services under nats/nats-server.conf, each with its own user", () => {
  it("consume, summarize, snapshot and serve prompts, with no permission violation", async () => {
    for (let i = 0; i < 80; i++) {
      const m = chatMessage("sec", i);
      await publishMessage(platform, { ...m, text: `${m.text} ${SECRET}` });
    }
    // A bad event carrying the secret too: its dead letter must not print it.
    await publishRaw(
      platform,
      platform.s.messageCreated("sec"),
      new TextEncoder().encode(`${SECRET} is not JSON`),
    );
    // The platform cannot read snapshots, so settling is checked through the prompt-builder.
    await waitFor(
      "the outline to reflect all 80 messages",
      async () => {
        const r = await builder.get("/threads/sec/outline");
        return r.status === 200 && (r.body as { count: number }).count === 80;
      },
      60_000,
    );
    const prompt = await builder.get("/threads/sec/prompt?agent=north");
    expect(prompt.status).toBe(200);
    expect(prompt.text).toContain(SECRET); // the API serves the thread; the logs must not
    const zoom = await builder.get("/threads/sec/zoom?id=0&n=1");
    expect(zoom.status).toBe(200);
    // Metrics go builder → worker over outline.api.metrics.worker.
    const metrics = await builder.get("/metrics");
    expect(metrics.text).toContain("outline_worker_events_applied_total");
    // The explorer: the list (a consumer on the bucket's stream), the actor (asked of the
    // workers over the actor feed) and a live stream (a KV watch, a watch notice).
    const list = await builder.get("/ui/api/threads");
    expect((list.body as { threads: { thread: string }[] }).threads.map((t) => t.thread)).toEqual([
      "sec",
    ]);
    const actor = await builder.get("/ui/api/threads/sec/actor");
    expect((actor.body as { live: boolean }).live).toBe(true);
    const live = await fetch(`${builder.base}/ui/api/threads/sec/events`);
    expect(live.headers.get("content-type")).toContain("text/event-stream");
    await new Promise((r) => setTimeout(r, 300));
    await live.body?.cancel();

    const log = readFileSync(join(nats.dir, "nats-server.log"), "utf8");
    expect(log.match(/.*Violation.*/g) ?? [], "permission violations").toEqual([]);
  });

  it("prints no message text and no password at info level", () => {
    for (const [name, output] of [
      ["thread-worker", worker.output],
      ["prompt-builder", builder.output],
    ] as const) {
      // Not even a parser's excerpt: no 8 characters of the secret in a row.
      for (let k = 0; k + 8 <= SECRET.length; k++) {
        expect(output, name).not.toContain(SECRET.slice(k, k + 8));
      }
      for (const pw of Object.values(passwords)) expect(output, name).not.toContain(pw);
      // Some output proves the check looked at something.
      expect(output.length, name).toBeGreaterThan(20);
    }
  });

  it("settles the same as the pure core would", async () => {
    await waitSettled(reader, ["sec"]);
    await expectMatchesCleanRun(reader, ["sec"], SMALL);
  });

  // Last: the refusal goes into the server's log the first test reads.
  it("stops a prompt-builder whose user may not subscribe to its API, in one line", async () => {
    // As `npm start` with the worker's credentials for both services would start it.
    const wrong = new BuilderProcess(
      workerEnv(nats.url, DEFAULT_NAMES, SMALL, {
        NATS_USER: "thread-worker",
        NATS_PASSWORD: passwords.OUTLINE_WORKER_PASSWORD,
      }),
      await freePort("127.0.0.1"),
    );
    processes.push(wrong);
    const served = await wrong.started("prompt-builder", ["HTTP on"], START_DEADLINE_MS).then(
      () => true,
      () => false,
    );
    expect(served, wrong.output).toBe(false);
    expect((await wrong.exited).code).toBe(1);
    expect(wrong.output).toBe(
      `prompt-builder: NATS user 'thread-worker' may not subscribe to outline.api.prompt (Permissions Violation for Subscription to "outline.api.prompt" using queue "outline-prompt-builder"): the prompt-builder answers requests on outline.api.>: give that user subscribe on outline.api.> (as user prompt-builder has in nats/nats-server.conf), or start the prompt-builder as a user that has it (docs/infrastructure.md, "One user for both services")\n`,
    );
  });
});
