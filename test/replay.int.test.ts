import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseNames } from "../services/config/names.ts";
import { run, type ReplayDeps } from "../services/cli/replay/run.ts";
import { subjects } from "../services/nats/subjects.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { jobFor } from "../shared/job-view.ts";
import type { SummaryEvent } from "../shared/history.ts";
import type { Summarizer } from "../shared/jobs.ts";
import type { BuiltNode } from "../shared/nodes.ts";
import { parseSettings } from "../shared/settings.ts";
import { toSnapshot, type OutlineSnapshot } from "../shared/snapshot.ts";
import {
  appendMessage,
  findBuilt,
  initialThreadState,
  outboxPublished,
  summaryBuilt,
  takeJobs,
  type ThreadState,
} from "../shared/thread.ts";
import { fakeSummary, hash, makeMessage } from "./support/conversation.ts";

// Names of our own, so this file's streams never meet another test's on the shared server.
const env: Record<string, string> = {
  NATS_URL: process.env.NATS_URL ?? "",
  OUTLINE_CHAT_STREAM: "RP_CHAT",
  OUTLINE_CHAT_PREFIX: "rpchat",
  OUTLINE_HISTORY_STREAM: "RP_HISTORY",
  OUTLINE_HISTORY_PREFIX: "rphistory",
  OUTLINE_DEAD_STREAM: "RP_DEAD",
  OUTLINE_DEAD_SUBJECT: "rp.dead",
  OUTLINE_KV_BUCKET: "rp-outline",
  HISTORY_LINE: "128",
  HISTORY_TAIL: "100,200",
  HISTORY_OUTLINE: "2000,4000",
};
const names = parseNames(env);
const settings = parseSettings(env);
const s = subjects(names);
const THREADS = 50;

let nc: NatsConnection;
let js: JetStreamClient;
let kv: KV;
const expected = new Map<string, OutlineSnapshot>();
/** Where a model-built leaf is: its node and HISTORY sequence. */
type LeafAt = { level: number; index: number; seq: number };
/** HISTORY sequence of one model-built leaf per thread, to delete in the missing-node test. */
const modelNodes = new Map<string, LeafAt>();

function textFor(thread: string, i: number): string {
  const h = hash(`${thread}:${i}`);
  // Mostly short (free leaves), some long enough to need the summarizer.
  const size = h % 5 === 0 ? 200 + (h % 600) : 10 + (h % 90);
  return `${thread} message ${i} ` + "lorem ipsum ".repeat(Math.ceil(size / 12)).slice(0, size);
}

async function publishNode(
  node: BuiltNode,
  thread: string,
  by: string,
  message?: { id: string; seq: number },
) {
  const event: SummaryEvent = {
    thread,
    level: node.level,
    index: node.index,
    text: node.text,
    until: node.until,
    by,
    ...(message ? { message } : {}),
  };
  return js.publish(s.historyNode(thread, node.level, node.index), JSON.stringify(event), {
    msgID: s.historyMsgId(thread, node.level, node.index),
  });
}

/** Builds the thread as a worker would (pure core + fakeSummary), publishing every built node. */
async function buildThread(
  thread: string,
  log: { message: ReturnType<typeof makeMessage>; seq: number }[],
) {
  let st: ThreadState = initialThreadState(thread, settings);
  for (const { message, seq } of log) {
    st = appendMessage(st, message, seq).state;
    for (;;) {
      for (const node of st.outbox) await publishNode(node, thread, "free", node.message);
      st = outboxPublished(st, st.outbox.length);
      const taken = takeJobs(st, Number.MAX_SAFE_INTEGER);
      if (taken.started.length === 0) break;
      st = taken.state;
      for (const ref of taken.started) {
        const job = jobFor(st, ref);
        const text = fakeSummary(job);
        const until =
          job.kind === "leaf"
            ? job.message.at
            : (findBuilt(st, { level: ref.level - 1, index: ref.index * 2 + 1 }) as BuiltNode)
                .until;
        const ack = await publishNode(
          { ...ref, text, until },
          thread,
          "fake",
          job.kind === "leaf" ? { id: job.message.id, seq: job.seq } : undefined,
        );
        // A leaf: the cut that takes its message out waits for it, so a replay needs it too (an
        // eager parent may never be used, and a node held for its group is never built).
        if (!modelNodes.has(thread) && ref.level === 0) {
          modelNodes.set(thread, { ...ref, seq: ack.seq });
        }
        st = summaryBuilt(st, ref, text).state;
      }
    }
  }
  return st;
}

function sink(isTTY = false) {
  let text = "";
  return {
    out: { write: (t: string) => void (text += t), isTTY },
    text: () => text,
  };
}

/** Counts every summarizer call a replay makes; answers like the fixture did. */
function countingSummarizer() {
  let calls = 0;
  const summarizer: Summarizer = {
    name: "fake",
    summarize: (job) => {
      calls += 1;
      return Promise.resolve({ text: fakeSummary(job) });
    },
  };
  return { summarizer, calls: () => calls };
}

async function replay(argv: string[], deps: Partial<ReplayDeps> = {}) {
  const stdout = sink();
  const stderr = sink();
  const counter = countingSummarizer();
  const code = await run(argv, {
    env,
    stdout: stdout.out,
    stderr: stderr.out,
    summarizer: counter.summarizer,
    ...deps,
  });
  return { code, stdout: stdout.text(), stderr: stderr.text(), calls: counter.calls() };
}

beforeAll(async () => {
  nc = await connect({ servers: env.NATS_URL });
  const topology = await ensureTopology(nc, names);
  js = jetstream(nc);
  kv = topology.kv;
  // Threads interleaved in CHAT, as a platform would publish them.
  const logs = new Map<string, { message: ReturnType<typeof makeMessage>; seq: number }[]>();
  const sizes = Array.from({ length: THREADS }, (_, t) => 10 + ((t * 37) % 70));
  const longest = Math.max(...sizes);
  for (let i = 0; i < longest; i++) {
    await Promise.all(
      sizes.map(async (size, t) => {
        if (i >= size) return;
        const thread = `rp-t${t}`;
        const message = makeMessage(thread, i, textFor(thread, i));
        const ack = await js.publish(s.messageCreated(thread), JSON.stringify(message), {
          msgID: message.id,
        });
        const log = logs.get(thread) ?? [];
        log.push({ message, seq: ack.seq });
        logs.set(thread, log);
      }),
    );
  }
  for (const [thread, log] of logs) {
    log.sort((a, b) => a.seq - b.seq);
    const st = await buildThread(thread, log);
    const snapshot = toSnapshot(st);
    expected.set(thread, snapshot);
    await kv.put(thread, JSON.stringify(snapshot));
  }
}, 120_000);

afterAll(async () => {
  await nc?.drain();
});

describe("outline replay", () => {
  it("fixture: the threads were cut and merged, so the replay has work to reproduce", () => {
    const cut = [...expected.values()].filter((snap) => snap.boundary > 0);
    const merged = [...expected.values()].filter((snap) => snap.lines.some((l) => l.level > 0));
    expect(cut.length).toBeGreaterThan(THREADS / 2);
    expect(merged.length).toBeGreaterThan(0);
    expect(modelNodes.size).toBeGreaterThan(THREADS / 2);
  });

  it("--all --verify: every one of 50 threads matches its snapshot, with zero model calls", async () => {
    // Some threads end with nodes held for their summarizer group: never built, not in HISTORY.
    expect([...expected.values()].filter((e) => (e.pending.held ?? 0) > 0).length).toBeGreaterThan(
      0,
    );
    const r = await replay(["--all", "--verify"]);
    expect(r.stderr).not.toMatch(/replay: (?!\d)/);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`verify: all ${THREADS} threads match bucket 'rp-outline'`);
    expect(r.stdout).toMatch(/model calls: 0/);
    expect(r.calls).toBe(0);
    // Not a TTY: plain progress lines, ending with the total.
    const total = [...expected.values()].reduce((n, snap) => n + snap.count, 0);
    expect(r.stderr).toContain(`replay: ${total}/${total} messages`);
    expect(r.stderr).not.toContain("\r");
  });

  it("--all --search with no search service running rebuilds the outlines and fails, saying so", async () => {
    // A prefix no search service of another test answers on.
    const r = await replay(["--all", "--search"], {
      env: { ...env, OUTLINE_API_PREFIX: "rp-api-nobody" },
    });
    expect(r.stdout).toContain(`rebuilt ${THREADS} threads`);
    expect(r.stderr).toContain(
      "replay: the outlines were rebuilt, but no search index was: no search service answered (none runs). Start one (npm start runs one when HISTORY_SEARCH=on), then run 'outline replay --all --search' again\n",
    );
    expect(r.code).toBe(2);
  });

  it("--into writes snapshots equal to the live ones and leaves the live bucket untouched", async () => {
    const before = new Map<string, number>();
    for (const thread of expected.keys())
      before.set(thread, (await kv.get(thread))?.revision ?? -1);
    const r = await replay(["--all", "--into", "rp-rebuilt"]);
    expect(r.code).toBe(0);
    expect(r.calls).toBe(0);
    const rebuilt = await new Kvm(js).open("rp-rebuilt");
    for (const [thread, snapshot] of expected) {
      expect((await rebuilt.get(thread))?.json<OutlineSnapshot>()).toEqual(snapshot);
      expect((await kv.get(thread))?.revision).toBe(before.get(thread));
    }
    const liveStatus = await kv.status();
    expect(liveStatus.values).toBe(THREADS);
  });

  it("--into the live bucket is refused with a message naming the way out", async () => {
    const r = await replay(["--all", "--into", "rp-outline"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--into rp-outline is the live bucket");
  });

  it("--verify reports a snapshot tampered in KV, field by field, and exits non-zero", async () => {
    const thread = [...expected.entries()].find(([, snap]) => snap.lines.length > 1)?.[0] as string;
    const good = expected.get(thread) as OutlineSnapshot;
    const bad = structuredClone(good);
    (bad.lines[0] as { text: string }).text = "tampered";
    bad.count += 1;
    await kv.put(thread, JSON.stringify(bad));
    try {
      const r = await replay(["--all", "--verify"]);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain(`thread ${thread}: 2 differences`);
      expect(r.stdout).toContain(`${thread}: lines[0].text: stored "tampered", rebuilt`);
      expect(r.stdout).toContain(
        `${thread}: count: stored ${good.count + 1}, rebuilt ${good.count}`,
      );
      expect(r.stdout).toContain("verify: 1 thread differ");
      const one = await replay(["--thread", thread, "--verify"]);
      expect(one.code).toBe(1);
    } finally {
      await kv.put(thread, JSON.stringify(good));
    }
  });

  it("--all --verify reports a snapshot whose thread has no events, and not a deleted key", async () => {
    const some = expected.values().next().value as OutlineSnapshot;
    await kv.put("rp-ghost", JSON.stringify({ ...some, thread: "rp-ghost" }));
    await kv.put("rp-gone", JSON.stringify({ ...some, thread: "rp-gone" }));
    await kv.delete("rp-gone");
    try {
      const r = await replay(["--all", "--verify"]);
      expect(r.code).toBe(1);
      expect(r.stdout).toContain("thread rp-ghost: ");
      expect(r.stdout).not.toContain("thread rp-gone");
      expect(r.stdout).toContain("verify: 1 thread differ");
    } finally {
      await kv.purge("rp-ghost");
      await kv.purge("rp-gone");
    }
  });

  it("a node missing from HISTORY is an error naming it; --resummarize builds and publishes it", async () => {
    const [thread, node] = [...modelNodes.entries()][0] as [
      string,
      { level: number; index: number; seq: number },
    ];
    const jsm = await jetstreamManager(nc);
    await jsm.streams.deleteMessage(names.historyStream, node.seq);
    const size = 2 ** node.level;
    const name = `${node.index * size}+${size}`;

    const missing = await replay(["--thread", thread]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `node ${name} (level ${node.level}, index ${node.index}) of thread '${thread}' is not in HISTORY`,
    );
    expect(missing.stderr).toContain("--resummarize");

    const fixed = await replay(["--thread", thread, "--resummarize", "--verify"]);
    expect(fixed.code).toBe(0);
    expect(fixed.calls).toBe(1);
    expect(fixed.stdout).toMatch(/model calls: 1/);

    const again = await replay(["--thread", thread, "--verify"]);
    expect(again.code).toBe(0);
    expect(again.calls).toBe(0);
    expect(again.stdout).toContain("verify: all 1 thread match");
  });

  it("a HISTORY event that is not a node of its subject's thread is ignored and counted, never displacing a stored node", async () => {
    const [[kept, keptNode], [lost, lostNode]] = [...modelNodes.entries()]
      .filter(([thread]) => thread !== "rp-t3")
      .slice(1, 3) as [[string, LeafAt], [string, LeafAt]];
    // On a node stored already: a later event that is not JSON, and one naming another thread.
    const onKept = s.historyNode(kept, keptNode.level, keptNode.index);
    await js.publish(onKept, "not json");
    await js.publish(onKept, JSON.stringify({ thread: lost, level: 0, index: 0, text: "x" }));
    const r = await replay(["--thread", kept, "--verify"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("verify: all 1 thread match");
    expect(r.stdout).toContain(
      "ignored 2 HISTORY events whose body is not a summary node of its subject's thread",
    );

    // The only event of a node the replay needs is invalid: the node is missing, and said so.
    const jsm = await jetstreamManager(nc);
    await jsm.streams.deleteMessage(names.historyStream, lostNode.seq);
    await js.publish(s.historyNode(lost, lostNode.level, lostNode.index), "{}");
    const missing = await replay(["--thread", lost]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `(level ${lostNode.level}, index ${lostNode.index}) of thread '${lost}' is not in HISTORY`,
    );
  });

  it("an unknown thread and a bad command line are errors that say what to do", async () => {
    const unknown = await replay(["--thread", "rp-nobody"]);
    expect(unknown.code).toBe(2);
    // The error alone: no empty progress line before it.
    expect(unknown.stderr).toMatch(/^replay: thread 'rp-nobody' has no events in stream RP_CHAT/);
    // It points at what lists threads, not at --all (which prints counts, no ids).
    expect(unknown.stderr).toContain("the explorer does (GET /ui/ of the prompt-builder");
    expect(unknown.stderr).not.toContain("--all");
    const neither = await replay([]);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("--thread T for one, or --all");
    // Refused before anything is read, not after the whole rebuild.
    const badInto = await replay(["--all", "--into", "bad bucket"]);
    expect(badInto.code).toBe(2);
    expect(badInto.stderr).toContain("--into 'bad bucket' is not a bucket name");
    expect(badInto.stderr).not.toContain("msg/s");
  });

  it("one thread is counted in the singular", async () => {
    const r = await replay(["--thread", "rp-t4", "--into", "rp-rebuilt-one"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^HISTORY: \d+ nodes? of 1 thread$/m);
    expect(r.stdout).toMatch(
      /^rebuilt 1 thread: \d+ messages, \d+ outline lines?; model calls: 0$/m,
    );
    expect(r.stdout).toContain("wrote 1 snapshot into bucket 'rp-rebuilt-one'");
  });

  it("on a TTY the progress is a redrawn bar with messages/s and ETA", async () => {
    const tty = sink(true);
    const code = await run(["--thread", "rp-t3"], { env, stdout: sink().out, stderr: tty.out });
    expect(code).toBe(0);
    expect(tty.text()).toMatch(/\rreplay \[#+\] 100% \d+\/\d+ messages {2}\d+ msg\/s {2}ETA 0s/);
  });
});
