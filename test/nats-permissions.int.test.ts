import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_NAMES } from "../services/config/names.ts";
import { connectNats, NatsConnectError } from "../services/nats/connect.ts";
import { ensureTopology, publishDeadLetter, subjects } from "../services/nats/topology.ts";
import { startNatsServer, type LocalNats } from "../services/start/nats-server.ts";
import { forwardSearch } from "../services/prompt-builder/search-forward.ts";
import { clusterView, serveCluster } from "../services/cluster/view.ts";
import { startSearchService } from "../services/search/service.ts";
import { openAppliedIds } from "../services/cli/applied-ids.ts";
import { openDeletedThreads } from "../services/cli/deleted-threads.ts";
import {
  ensureWorkerBuckets,
  kvStream,
  kvSubject,
  workerBucketNames,
} from "../services/nats/buckets.ts";
import { eraseIdIndex, idKey } from "../services/nats/id-index.ts";
import { answerJoin, askJoin, joinSubject } from "../services/cluster/instance.ts";
import { createReader } from "../services/nats/reader.ts";
import { eraseSubject, purgeBySubjectIsSafe } from "../services/nats/erase.ts";
import { lettersAfterDelete } from "../services/thread-worker/eraser.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import { makeMessage } from "./support/conversation.ts";
import { startTestApi } from "./support/prompt-builder-api.ts";
import { publishState, replayWithNodes, storedMessages } from "./support/outline-fixture.ts";

// nats/nats-server.conf is a deliverable: this runs a server with it and checks that each user
// can do its job and nothing more, with the default names the file is written for.
const passwords = {
  OUTLINE_WORKER_PASSWORD: "worker-pw",
  OUTLINE_BUILDER_PASSWORD: "builder-pw",
  OUTLINE_PLATFORM_PASSWORD: "platform-pw",
};
const names = DEFAULT_NAMES;
const s = subjects(names);

let dir: string;
let server: LocalNats;
const open: NatsConnection[] = [];

async function as(user: string, password: string): Promise<NatsConnection> {
  const nc = await connectNats({
    url: server.url,
    name: `perm-${user}`,
    auth: { kind: "user", user, password },
    startupTimeoutMs: 2_000,
  });
  open.push(nc);
  return nc;
}

const passwordOf: Record<string, string> = {
  "thread-worker": passwords.OUTLINE_WORKER_PASSWORD,
  "prompt-builder": passwords.OUTLINE_BUILDER_PASSWORD,
  platform: passwords.OUTLINE_PLATFORM_PASSWORD,
};

/** The published bin as `user`, `input` on stdin. */
function outlineAs(
  user: string,
  args: string[],
  input = "",
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      NATS_URL: server.url,
      NATS_USER: user,
      NATS_PASSWORD: passwordOf[user],
    };
    const child = execFile(
      process.execPath,
      ["services/cli/bin.js", ...args],
      { env, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? -1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

async function fails(promise: Promise<unknown>): Promise<boolean> {
  try {
    await promise;
    return false;
  } catch {
    return true;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "outline-perm-"));
  server = await startNatsServer({
    storeDir: join(dir, "nats"),
    preferredPort: 0,
    configFile: join(process.cwd(), "nats/nats-server.conf"),
    env: { ...process.env, ...passwords },
  });
});
afterAll(async () => {
  await Promise.all(open.map((nc) => nc.close()));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("nats/nats-server.conf", () => {
  it("lets the thread worker build the topology and do its work", async () => {
    const nc = await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD);
    // DEAD as the version with one dead-letter subject made it: the worker adds the new ones.
    await (
      await jetstreamManager(nc)
    ).streams.add({ name: names.deadStream, subjects: [names.deadSubject] });
    const { js, jsm, kv } = await ensureTopology(nc, names);
    await ensureTopology(nc, names);
    expect((await jsm.streams.info(names.deadStream)).config.subjects).toEqual(
      s.deadStreamSubjects,
    );

    const platform = await as("platform", passwords.OUTLINE_PLATFORM_PASSWORD);
    await jetstream(platform).publish(s.messageCreated("t1"), '{"id":"m1"}', { msgID: "m1" });

    await jsm.consumers.add(names.chatStream, {
      durable_name: names.workerDurable,
      ack_policy: AckPolicy.Explicit,
    });
    const consumer = await js.consumers.get(names.chatStream, names.workerDurable);
    const msg = await consumer.next({ expires: 2_000 });
    expect(msg?.subject).toBe(s.messageCreated("t1"));
    expect(await msg?.ackAck()).toBe(true);

    await js.publish(s.historyNode("t1", 0, 0), "line", { msgID: s.historyMsgId("t1", 0, 0) });
    await publishDeadLetter(js, names, { reason: "r", subject: "x", data: new Uint8Array([1]) });
    const letter = { reason: "r", subject: s.messageCreated("t1"), data: new Uint8Array([1]) };
    expect((await publishDeadLetter(js, names, letter)).stream).toBe(names.deadStream);
    await kv.put("t1", "{}");
    expect((await kv.get("t1"))?.string()).toBe("{}");
    const node = await jsm.direct.getMessage(names.historyStream, {
      last_by_subj: s.historyNode("t1", 0, 0),
    });
    expect(node?.string()).toBe("line");

    // thread.deleted erases as eraser.ts does: a purge by subject on nats-server 2.10 on, a
    // delete per message before (erase.ts). The server here may be either: both must be allowed.
    await ensureWorkerBuckets(js, jsm, names);
    const ids = workerBucketNames(names).ids;
    await js.publish(kvSubject(ids, "t1.m1"), "1");
    const purge = purgeBySubjectIsSafe(nc.info?.version);
    expect(await eraseSubject(jsm, names.chatStream, s.threadChat("t1"), { purge })).toBe(1);
    expect(await eraseSubject(jsm, names.historyStream, s.threadHistory("t1"), { purge })).toBe(1);
    expect(await eraseIdIndex(jsm, ids, "t1", purge)).toBe(1);
    // thread.deleted reads where the thread's letters end, then purges them.
    expect(
      await lettersAfterDelete(jsm, names.deadStream, s.deadLetterOf("t1"), names.chatStream, 0),
    ).toBeUndefined();
    await jsm.streams.purge(names.deadStream, { filter: s.deadLetterOf("t1") });
    await eraseSubject(jsm, kvStream(names.kvBucket), kvSubject(names.kvBucket, "t1"), { purge });
    expect(await kv.get("t1")).toBeNull();
    expect((await jsm.streams.info(names.historyStream)).state.messages).toBe(0);
    expect((await jsm.streams.info(names.deadStream)).state.messages).toBe(1);
  });

  it("lets the prompt-builder read and answer requests, but not write", async () => {
    const worker = await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD);
    const { js: workerJs, kv: workerKv } = await ensureTopology(worker, names);
    await workerKv.put("t2", "snapshot");
    await workerJs.publish(s.historyNode("t2", 1, 0), "node");
    const platform = await as("platform", passwords.OUTLINE_PLATFORM_PASSWORD);
    await jetstream(platform).publish(s.messageCreated("t2"), "hello");

    const nc = await as("prompt-builder", passwords.OUTLINE_BUILDER_PASSWORD);
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const kv = await new Kvm(js).open(names.kvBucket);
    expect((await kv.get("t2"))?.string()).toBe("snapshot");
    const node = await jsm.direct.getMessage(names.historyStream, {
      last_by_subj: s.historyNode("t2", 1, 0),
    });
    expect(node?.string()).toBe("node");
    const reader = await js.consumers.get(names.chatStream, {
      filter_subjects: s.messageCreated("t2"),
    });
    expect((await reader.next({ expires: 2_000 }))?.string()).toBe("hello");
    // A newer message's id, asked of the worker's id index.
    const { ids } = await ensureWorkerBuckets(
      jetstream(worker),
      await jetstreamManager(worker),
      names,
    );
    await ids.put(idKey("t2", "m1"), "7");
    const threads = createReader(nc, names);
    expect(await threads.idFirstSeq?.("t2", "m1")).toBe(7);
    expect(await threads.idFirstSeq?.("t2", "m2")).toBeUndefined();

    const sub = nc.subscribe(`${names.apiPrefix}.>`, {
      callback: (_err, m) => {
        m.respond(`prompt for ${m.subject}`);
      },
    });
    await nc.flush();
    const reply = await platform.request(`${names.apiPrefix}.prompt`, "", { timeout: 2_000 });
    expect(reply.string()).toBe(`prompt for ${names.apiPrefix}.prompt`);
    sub.unsubscribe();

    expect(await fails(kv.put("t2", "overwrite"))).toBe(true);
    expect(await fails(js.publish(s.messageCreated("t2"), "forged", { timeout: 1_000 }))).toBe(
      true,
    );
    expect(await fails(jsm.streams.purge(names.chatStream))).toBe(true);
  });

  it("lets the prompt-builder's /healthz ask its own worker whether it joined", async () => {
    const worker = await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD);
    const builder = await as("prompt-builder", passwords.OUTLINE_BUILDER_PASSWORD);
    const subject = joinSubject(names, "4242-0a1b2c3d");
    const sub = answerJoin(worker, subject, () => ({ joined: true, state: "reads its share" }));
    try {
      await worker.flush();
      expect(await askJoin(builder, subject, 2_000)).toEqual({
        joined: true,
        state: "reads its share",
      });
    } finally {
      sub.unsubscribe();
    }
  });

  it("lets the search service run as the prompt-builder, and the prompt-builder ask it", async () => {
    const platform = await as("platform", passwords.OUTLINE_PLATFORM_PASSWORD);
    const message = makeMessage("s1", 0, "the locker code is 4711");
    await jetstream(platform).publish(s.messageCreated("s1"), JSON.stringify(message));
    const nc = await as("prompt-builder", passwords.OUTLINE_BUILDER_PASSWORD);
    const service = await startSearchService({
      nc,
      names,
      path: join(dir, "search.db"),
      log: () => {},
    });
    try {
      await service.indexer.ready;
      const builder = await as("prompt-builder", passwords.OUTLINE_BUILDER_PASSWORD);
      const ask = forwardSearch(builder, names.apiPrefix, { on: true });
      const reply = JSON.parse(
        new TextDecoder().decode(await ask({ thread: "s1", q: "locker" })),
      ) as { hits: { message: string }[] };
      expect(reply.hits.map((h) => h.message)).toEqual([message.id]);
    } finally {
      await service.stop();
    }
  });

  it("lets the platform publish chat events only", async () => {
    const nc = await as("platform", passwords.OUTLINE_PLATFORM_PASSWORD);
    const js = jetstream(nc);
    await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD).then((w) =>
      ensureTopology(w, names),
    );
    const ack = await js.publish(s.threadDeleted("t3"), "{}");
    expect(ack.stream).toBe(names.chatStream);
    expect(await fails(js.publish(s.historyNode("t3", 0, 0), "x", { timeout: 1_000 }))).toBe(true);
    expect(await fails(js.publish(names.deadSubject, "x", { timeout: 1_000 }))).toBe(true);
    expect(await fails(js.publish(s.deadLetterOf("t3"), "x", { timeout: 1_000 }))).toBe(true);
    expect(await fails(jetstreamManager(nc).then((m) => m.streams.delete("CHAT")))).toBe(true);
  });

  it("lets the platform run `outline import`, which skips what the worker applied", async () => {
    const worker = await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD);
    const { js, jsm, kv } = await ensureTopology(worker, names);
    await ensureWorkerBuckets(js, jsm, names);
    const file = [0, 1, 2]
      .map((i) => JSON.stringify(makeMessage("imp1", i, `line ${i}`)))
      .join("\n");
    const importAsPlatform = () => outlineAs("platform", ["import", "-"], file);
    const first = await importAsPlatform();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("3 lines: 3 published, 0 already stored, 0 bad");
    // It may read which threads the worker deleted (their actor state), one key at a time.
    expect(first.stderr).not.toContain("could not read which threads the worker deleted");
    // The worker's snapshot of the thread, young (every message in its tail).
    const young = replayWithNodes(
      "imp1",
      DEFAULT_SETTINGS,
      await storedMessages(jsm, names, "imp1", 3),
    );
    await publishState(js, kv, names, young.state, young.nodes);
    const again = await importAsPlatform();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("could not read what the worker has applied");
    expect(again.stderr).not.toContain("could not read which threads the worker deleted");
    expect(again.stdout).toContain("0 published, 0 already stored, 3 already applied, 0 bad");

    // The prompt-builder reads the id index (a newer message's id), not the actor states: a
    // user who may not read a bucket is told why what it checks goes unchecked.
    const reasons: string[] = [];
    const builder = await as("prompt-builder", passwords.OUTLINE_BUILDER_PASSWORD);
    const applied = await openAppliedIds(builder, names, (r) => reasons.push(r));
    expect(applied).toBeDefined();
    applied?.close();
    expect(await openDeletedThreads(builder, names, (r) => reasons.push(r))).toBeUndefined();
    expect(reasons).toEqual([expect.stringContaining("Permissions Violation")]);
  });

  it("lets the platform zoom and read the cluster through a running prompt-builder, else says why not", async () => {
    const worker = await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD);
    const { js, jsm, kv } = await ensureTopology(worker, names);
    const platform = await as("platform", passwords.OUTLINE_PLATFORM_PASSWORD);
    const sent = [0, 1, 2].map((i) => makeMessage("zoom1", i, `zoom line ${i}`));
    for (const m of sent)
      await jetstream(platform).publish(s.messageCreated("zoom1"), JSON.stringify(m));
    const built = replayWithNodes(
      "zoom1",
      DEFAULT_SETTINGS,
      await storedMessages(jsm, names, "zoom1", 3),
    );
    await publishState(js, kv, names, built.state, built.nodes);

    // The platform may not read CHAT: with no prompt-builder to ask, it is told so at once.
    const alone = await outlineAs("platform", ["zoom", "zoom1", "0", "1"]);
    expect({ code: alone.code, stderr: alone.stderr }).toEqual({
      code: 1,
      stderr: `outline zoom: NATS user 'platform' may not read stream CHAT (Permissions Violation for Publish to "$JS.API.DIRECT.GET.CHAT"), and no prompt-builder answers on ${names.apiPrefix}.zoom to ask instead: run it as a user that may; with nats/nats-server.conf: prompt-builder or thread-worker; platform through a running prompt-builder (docs/infrastructure.md, "Which user runs which command")\n`,
    });

    const builder = await as("prompt-builder", passwords.OUTLINE_BUILDER_PASSWORD);
    const api = await startTestApi(builder, names);
    const cluster = serveCluster(builder, names, clusterView(builder, names), () => {});
    try {
      const zoom = await outlineAs("platform", ["zoom", "zoom1", "0", "1"]);
      expect(zoom.code, zoom.stderr).toBe(0);
      expect(zoom.stdout).toContain(sent[0]?.text);
      // The outline bucket it may read itself; the cluster bucket it asks for.
      const outline = await outlineAs("platform", ["outline", "zoom1"]);
      expect(outline.code, outline.stderr).toBe(0);
      expect(outline.stdout).toContain("thread zoom1: 3 messages");
      const members = await outlineAs("platform", ["cluster"]);
      expect(members.code, members.stderr).toBe(0);
      expect(members.stdout).toContain("single mode");
    } finally {
      await cluster.drain();
      await api.close();
    }
  });

  it("lets the thread-worker run `outline dead`, and tells the platform it may not", async () => {
    const worker = await as("thread-worker", passwords.OUTLINE_WORKER_PASSWORD);
    const { js } = await ensureTopology(worker, names);
    await publishDeadLetter(js, names, {
      reason: "a reason to list",
      subject: s.messageCreated("dead1"),
      data: new TextEncoder().encode("not json"),
    });
    const platform = await outlineAs("platform", ["dead", "--thread", "dead1"]);
    expect({ code: platform.code, stderr: platform.stderr }).toEqual({
      code: 1,
      stderr: `outline dead: NATS user 'platform' may not read stream DEAD (Permissions Violation for Publish to "$JS.API.STREAM.INFO.DEAD"): run it as a user that may; with nats/nats-server.conf: thread-worker (docs/infrastructure.md, "Which user runs which command")\n`,
    });
    const listed = await outlineAs("thread-worker", ["dead", "--thread", "dead1"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("reason:   a reason to list");
  });

  it("refuses a wrong password with an error naming the credentials", async () => {
    const err = await as("platform", "wrong").catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(NatsConnectError);
    expect((err as Error).message).toContain("NATS_USER and NATS_PASSWORD");
  });
});
