import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { messageCreatedSchema, type Message } from "../shared/events.ts";
import { DEFAULT_SETTINGS } from "../shared/settings.ts";
import type { SummaryEvent } from "../shared/history.ts";
import { toSnapshot, type OutlineSnapshot } from "../shared/snapshot.ts";
import {
  NAME_VARIABLES,
  namesToEnv,
  type InfraNames,
  type NameKey,
} from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import {
  DEAD_LETTER_HEADERS,
  ensureTopology,
  publishDeadLetter,
  subjects,
} from "../services/nats/topology.ts";
import { startSearchService } from "../services/search/service.ts";
import { freePort, waitForPort } from "../services/util/processes.ts";
import { toPersisted } from "../services/thread-worker/actor-store.ts";
import { ensureWorkerBuckets } from "../services/nats/buckets.ts";
import { deleteThread, initialThreadState } from "../shared/thread.ts";
import { lineHolding } from "../shared/search.ts";
import { SEARCH_HEADER_LINE } from "../shared/prompt.ts";
import { startTestApi } from "./support/prompt-builder-api.ts";
import { makeMessage } from "./support/conversation.ts";
import {
  publishMessages,
  publishState,
  replayWithNodes,
  storedMessages,
  uniqueNames,
} from "./support/outline-fixture.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let names: InfraNames;
const thread = `cli-${Date.now().toString(36)}`;
let messages: Message[];
let nodes: SummaryEvent[];
let snapshot: OutlineSnapshot;

/** Runs the published bin exactly as `npx outline …` does, against the test's NATS and names. */
function outline(...args: string[]): Promise<Run> {
  return outlineNamed(names, ...args);
}

/** As `outline`, with other names. */
function outlineNamed(named: InfraNames, ...args: string[]): Promise<Run> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const key of Object.keys(NAME_VARIABLES) as NameKey[]) {
    env[NAME_VARIABLES[key]] = named[key];
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["services/cli/bin.js", ...args],
      { env, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** As `outline`, run in `cwd` with NATS_URL unset (as a person in a terminal would). */
function outlineIn(cwd: string, ...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...namesToEnv(names) };
  delete env.NATS_URL;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(process.cwd(), "services/cli/bin.js"), ...args],
      { env, cwd, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** As `outline`, on names of no stream or bucket there: a server that is not ours. */
function outlineElsewhere(
  elsewhere: InfraNames,
  cwd: string | undefined,
  ...args: string[]
): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...namesToEnv(elsewhere) };
  if (cwd !== undefined) delete env.NATS_URL;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(process.cwd(), "services/cli/bin.js"), ...args],
      { env, cwd: cwd ?? process.cwd(), timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** As `outline`, with `input` on stdin; `firstChunkOnly` closes stdout after the first output. */
function outlineWith(
  input: string | Uint8Array,
  args: string[],
  firstChunkOnly = false,
): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, ...namesToEnv(names) };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["services/cli/bin.js", ...args], { env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      // What `| head -1` does: the reader goes away.
      if (firstChunkOnly) child.stdout.destroy();
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("exit", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

beforeAll(async () => {
  const url = process.env.NATS_URL;
  if (!url) throw new Error("NATS_URL is unset: run through vitest's globalSetup");
  nc = await connectNats({ url, name: "cli-test" });
  names = uniqueNames();
  const topology = await ensureTopology(nc, names);
  ({ js, jsm } = topology);
  const kv = topology.kv;
  // State as the worker would leave it, built by the pure core: enough messages for cuts and merges.
  messages = Array.from({ length: 80 }, (_, i) =>
    makeMessage(thread, i, `message ${i}: ${"some words about the plan ".repeat(1 + (i % 4))}`),
  );
  const log = await publishMessages(js, names, messages);
  const built = replayWithNodes(
    thread,
    { line: 128, tail: [200, 400], outline: [1200, 2400], concurrency: 4 },
    log,
  );
  nodes = built.nodes;
  await publishState(js, kv, names, built.state, nodes);
  snapshot = toSnapshot(built.state);
});

afterAll(async () => {
  await nc?.close();
});

describe("outline --help", () => {
  it("lists the commands and gives each one's usage", async () => {
    const top = await outline("--help");
    expect(top.code).toBe(0);
    for (const name of ["send", "prompt", "outline", "zoom", "search"]) {
      expect(top.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
      const one = await outline(name, "--help");
      expect({ name, code: one.code }).toEqual({ name, code: 0 });
      expect(one.stdout).toContain(`usage: outline ${name} `);
    }
  });

  it("says what was wrong with a command line, with exit code 2", async () => {
    const unknown = await outline("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    const missing = await outline("send");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("outline send: takes 1 to 2 arguments, got 0\n");
    const badOption = await outline("zoom", thread, "0", "1", "--nope");
    expect(badOption.code).toBe(2);
    expect(badOption.stderr).toContain("--nope");
  });

  it("names the option meant, the rule a negative number breaks, and quotes only a text", async () => {
    const cases: [string[], string][] = [
      [
        ["send", thread, "hi", "--frm", "Ana"],
        "outline send: unknown option --frm; did you mean --from?\n",
      ],
      // A negative number reaches the command, which says its rule (not "unknown option -1").
      [
        ["zoom", thread, "-1", "1"],
        "outline zoom: id must be a whole number ≥ 0, got -1 [BAD_ID]\n",
      ],
      [["dead", "--limit", "-3"], "outline dead: --limit must be a whole number ≥ 1\n"],
      [
        ["cluster", "extra"],
        "outline cluster: takes no arguments, got 1: 'extra' is one too many\n",
      ],
      [
        ["outline", thread, "extra"],
        "outline outline: takes 1 argument, got 2: 'extra' is one too many\n",
      ],
      [
        ["send", thread, "hello", "big", "world"],
        `outline send: takes 1 to 2 arguments, got 4: 'big' 'world' are 2 too many (quote a text with spaces: "hello big world")\n`,
      ],
      [
        ["inspect", "--prot", "1"],
        "inspect: unknown option --prot; did you mean --port? (see 'outline inspect --help')\n",
      ],
    ];
    for (const [argv, first] of cases) {
      const r = await outline(...argv);
      expect({ argv, code: r.code, first: r.stderr.split("\n")[0] + "\n" }).toEqual({
        argv,
        code: 2,
        first,
      });
    }
  });
});

describe("outline search", () => {
  it("finds a message through the search service, and says so when none runs", async () => {
    const off = await outline("search", thread, "message 7:");
    expect(off.code).toBe(1);
    expect(off.stderr).toContain("SEARCH_OFF");

    const dir = mkdtempSync(join(tmpdir(), "outline-cli-search-"));
    const service = await startSearchService({ nc, names, path: join(dir, "s.db"), log: () => {} });
    try {
      await service.indexer.ready;
      const found = await outline("search", thread, "MESSAGE 7:");
      expect(found.code, found.stderr).toBe(0);
      const line = lineHolding(snapshot.lines, snapshot.boundary, 7);
      expect(line).not.toBeNull();
      expect(found.stdout).toContain(`#7 ${messages[7]?.from} at ${messages[7]?.at} (in ${line})`);
      expect(found.stdout).toContain("«message 7:»");
      const json = await outline("search", thread, "plan", "--limit", "3", "--json");
      const reply = JSON.parse(json.stdout) as { hits: { id: number }[]; before: number };
      expect(reply.hits.map((h) => h.id)).toEqual([79, 78, 77]);
      expect(reply.before).toBe(77);
      const bad = await outline("search", thread, "plan", "--limit", "0");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("BAD_LIMIT");
      // A replay of everything has the running search services rebuild their indexes too.
      const replayed = await outline("replay", "--all", "--search");
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(replayed.stdout).toMatch(/search index of \S+: rebuilding from CHAT…\n/);
      expect(replayed.stdout).toMatch(/search index of \S+: rebuilt from CHAT, \d+ messages/);
      expect((await outline("search", thread, "MESSAGE 7:")).stdout).toContain("«message 7:»");
      const one = await outline("replay", "--thread", thread, "--search");
      expect(one.code).toBe(2);
      expect(one.stderr).toContain("use it with --all");
    } finally {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("outline replay", () => {
  it("rebuilds a thread, and passes the exit code and output of a failure on", async () => {
    const rebuilt = await outline("replay", "--thread", thread);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.stdout).toContain(`rebuilt 1 thread: ${messages.length} messages`);
    expect(rebuilt.stdout).toMatch(/model calls: 0/);
    const neither = await outline("replay");
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain("--thread T for one, or --all");
  });
});

describe("outline send", () => {
  it("publishes a valid message.created on the thread's subject with Nats-Msg-Id = its id", async () => {
    const target = `${thread}-send`;
    const r = await outline("send", target, "hello there", "--from", "Ana", "--to", "north");
    expect(r.code, r.stderr).toBe(0);
    const sm = await jsm.direct.getMessage(names.chatStream, {
      last_by_subj: subjects(names).messageCreated(target),
    });
    if (!sm) throw new Error("nothing stored on the thread's subject");
    const body = messageCreatedSchema.parse(sm.json());
    expect(body).toMatchObject({
      thread: target,
      from: "Ana",
      to: "north",
      role: "user",
      text: "hello there",
    });
    expect(sm.header.get("Nats-Msg-Id")).toBe(body.id);
    expect(r.stdout).toContain(`sent ${body.id} to ${subjects(names).messageCreated(target)}`);
    expect(Date.now() - Date.parse(body.at)).toBeLessThan(60_000);
  });

  it("stores a message id once, and refuses an invalid thread id or role", async () => {
    const target = `${thread}-dup`;
    const first = await outline("send", target, "once", "--id", "fixed-1");
    const again = await outline("send", target, "once", "--id", "fixed-1");
    expect(first.code).toBe(0);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("duplicate");
    const info = await jsm.streams.info(names.chatStream, {
      subjects_filter: subjects(names).messageCreated(target),
    });
    expect(info.state.subjects?.[subjects(names).messageCreated(target)]).toBe(1);

    const badThread = await outline("send", "no.dots", "x");
    expect(badThread.code).toBe(2);
    expect(badThread.stderr).toContain("thread");
    const badRole = await outline("send", target, "x", "--role", "boss");
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toContain("role");
  });
});

describe("which nats-server the CLI asks", () => {
  it("a running start's, from a folder below it; else the default, and says so", async () => {
    const dir = mkdtempSync(join(tmpdir(), "outline-cli-url-"));
    try {
      const deep = join(dir, "docs", "notes");
      mkdirSync(deep, { recursive: true });
      // Whatever answers on the default port (a server of another project, or none): the
      // command fails, and says which server it asked (one that answered: that it is not ours).
      const lost = await outlineIn(deep, "outline", "cli-nowhere");
      expect(lost.code).toBe(1);
      expect(lost.stderr).toContain(
        "nats-server at nats://127.0.0.1:4222 (the default: NATS_URL is unset",
      );
      // `npm start` writes its server's URL to .data/nats.url in its folder.
      mkdirSync(join(dir, ".data"));
      writeFileSync(join(dir, ".data", "nats.url"), `${process.env.NATS_URL ?? ""}\n`);
      const found = await outlineIn(deep, "outline", thread);
      expect(found.code, found.stderr).toBe(0);
      expect(found.stdout).toContain(`thread ${thread}`);
      expect(found.stderr).toBe("");
      // `npm run cluster` writes its servers' URLs to .data/cluster/nats.url: found the same way,
      // and `outline cluster` names the server it asked.
      const cluster = mkdtempSync(join(tmpdir(), "outline-cli-cluster-"));
      try {
        mkdirSync(join(cluster, ".data", "cluster"), { recursive: true });
        const file = join(cluster, ".data", "cluster", "nats.url");
        writeFileSync(file, `${process.env.NATS_URL ?? ""}\n`);
        const members = await outlineIn(cluster, "cluster");
        expect(members.code, members.stderr).toBe(0);
        expect(members.stdout.split("\n")[0]).toBe(
          `asked ${process.env.NATS_URL} (from ${file}, written by 'npm run cluster')`,
        );
      } finally {
        rmSync(cluster, { recursive: true, force: true });
      }
      // A typo in the folder's config file is said by every command, as by the services.
      writeFileSync(join(deep, "outline.config.json"), JSON.stringify({ HISTORY_TALE: "1,2" }));
      const typo = await outlineIn(deep, "outline", thread);
      expect(typo.code, typo.stderr).toBe(0);
      expect(typo.stderr).toContain("outline: warning: config file");
      expect(typo.stderr).toContain("unknown key HISTORY_TALE is ignored (a typo?)");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names a .data/nats.url a killed 'npm start' left, and says to start it again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "outline-cli-stale-"));
    try {
      // A port nothing listens on any more, as after `kill -9` of the start that wrote the file.
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      mkdirSync(join(dir, ".data"));
      const file = join(dir, ".data", "nats.url");
      writeFileSync(file, `nats://127.0.0.1:${port}\n`);
      const r = await outlineIn(dir, "send", "demo", "x");
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `outline send: cannot connect to NATS at nats://127.0.0.1:${port} (from ${file}, written by an 'npm start'): connection refused; the 'npm start' that wrote it is not running (killed?): start it again ('npm start' in ${dir}), or set NATS_URL to a server that runs\n`,
      );
      // The replay connects on its own path: the same source, the same advice.
      const replay = await outlineIn(dir, "replay", "--all");
      expect(replay.code).toBe(2);
      expect(replay.stderr).toContain(
        `cannot connect to NATS at nats://127.0.0.1:${port} (from ${file}, written by an 'npm start')`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a nats-server that is up but not ours", () => {
  it("says it has no stream CHAT, names the server and where its URL came from", async () => {
    const url = process.env.NATS_URL ?? "";
    const elsewhere = uniqueNames();
    const missing = elsewhere.chatStream;
    const said = (source: string) =>
      `the nats-server at ${url} (${source}) answered, but has no stream ${missing} (OUTLINE_CHAT_STREAM): is it the right server? 'npm start' creates the streams (or set NATS_URL to the server it uses)\n`;
    const dir = mkdtempSync(join(tmpdir(), "outline-cli-elsewhere-"));
    try {
      writeFileSync(join(dir, "in.jsonl"), `${JSON.stringify(makeMessage("x", 0, "hi"))}\n`);
      for (const args of [
        ["outline", thread],
        ["prompt", thread],
        ["send", "elsewhere", "hi"],
        ["import", join(dir, "in.jsonl")],
      ]) {
        const r = await outlineElsewhere(elsewhere, undefined, ...args);
        expect({ args, code: r.code, stderr: r.stderr }).toEqual({
          args,
          code: 1,
          stderr: `outline ${args[0]}: ${said("set by NATS_URL, in the environment or the config file")}`,
        });
      }
      // The URL of a running 'npm start' found in .data/nats.url: that file is named.
      mkdirSync(join(dir, ".data"));
      writeFileSync(join(dir, ".data", "nats.url"), `${url}\n`);
      const local = await outlineElsewhere(elsewhere, dir, "outline", thread);
      expect(local.code).toBe(1);
      expect(local.stderr).toBe(
        `outline outline: ${said(`from ${join(dir, ".data", "nats.url")}, written by an 'npm start'`)}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a nats-server without JetStream", () => {
  it("says so in one line for every command, and how to turn it on", async () => {
    const port = await freePort();
    const server = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], {
      stdio: "ignore",
    });
    try {
      expect(await waitForPort("127.0.0.1", port, 10_000)).toBe(true);
      const url = `nats://127.0.0.1:${port}`;
      const env: NodeJS.ProcessEnv = { ...process.env, ...namesToEnv(names), NATS_URL: url };
      const said = `the nats-server at ${url} (set by NATS_URL, in the environment or the config file) has JetStream off: run the server as 'nats-server -js', or add 'jetstream {}' to its config file (with accounts, enable it for the account too); or set NATS_URL to a server with JetStream\n`;
      for (const args of [
        ["send", "js-off", "hi"],
        ["outline", thread],
        ["zoom", thread, "0", "1"],
        ["prompt", thread],
        ["dead"],
        ["import", "-"],
      ]) {
        const r = await new Promise<Run>((resolve) => {
          const child = execFile(
            process.execPath,
            ["services/cli/bin.js", ...args],
            { env, timeout: 60_000 },
            (err, stdout, stderr) =>
              resolve({ code: err ? Number(err.code ?? -1) : 0, stdout, stderr }),
          );
          child.stdin?.end(`${JSON.stringify(makeMessage("js-off", 0, "hi"))}\n`);
        });
        expect({ args, code: r.code, stderr: r.stderr }).toEqual({
          args,
          code: 1,
          stderr: `outline ${args[0]}: ${said}`,
        });
      }
    } finally {
      server.kill();
    }
  });
});

describe("outline outline / prompt / zoom", () => {
  it("prints the outline's lines with their levels and sizes", async () => {
    const r = await outline("outline", thread);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`thread ${thread}: ${snapshot.count} messages`);
    for (const line of snapshot.lines) {
      expect(r.stdout).toMatch(
        new RegExp(`^L${line.level} +${line.id}\\+${line.n} +${line.bytes} `, "m"),
      );
    }
    expect(snapshot.lines.some((l) => l.level > 0)).toBe(true);
    const json = await outline("outline", thread, "--json");
    expect(JSON.parse(json.stdout)).toEqual(snapshot);
  });

  it("prints the prompt the running prompt-builder builds, and says when none runs", async () => {
    // No prompt-builder on the test's subjects: the command says whom it asked and what to run.
    const none = await outline("prompt", thread, "--agent", "north");
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`no prompt-builder answers on ${names.apiPrefix}.prompt`);
    expect(none.stderr).toContain("npm start");
    expect(none.stderr).toContain("PROMPT_BUILDER_UNAVAILABLE");

    // The service has search on, this shell has not (HISTORY_SEARCH unset): the prompt is the
    // service's, header line about search(q) included.
    expect(process.env.HISTORY_SEARCH ?? "off").toBe("off");
    const api = await startTestApi(nc, names, { operations: { search: true } });
    try {
      const r = await outline("prompt", thread, "--agent", "north");
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("<chat>");
      expect(r.stdout).toContain(SEARCH_HEADER_LINE);
      const first = snapshot.lines[0];
      expect(r.stdout).toContain(`${first?.id}+${first?.n}|`);
      const last = messages.at(-1) as Message;
      expect(r.stdout).toContain(last.text);
      const json = JSON.parse(
        (await outline("prompt", thread, "--agent", "north", "--json")).stdout,
      ) as {
        messages: unknown[];
      };
      expect(json.messages).toHaveLength(1 + snapshot.tail.length);
      const served = await fetch(`${api.base}/threads/${thread}/prompt?agent=north`);
      expect(json).toEqual(await served.json());

      const unknown = await outline("prompt", "nobody-here");
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain("THREAD_NOT_FOUND");
      const bad = await outline("prompt", thread, "--format", "xml");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("BAD_FORMAT");
    } finally {
      await api.close();
    }
  });

  it("zooms into a line and reads a message whole; a bad zoom exits 2 naming the rule", async () => {
    const line = snapshot.lines.find((l) => l.n >= 2);
    if (!line) throw new Error("no merged line");
    const r = await outline("zoom", thread, String(line.id), String(line.n));
    expect(r.code, r.stderr).toBe(0);
    const left = nodes.find(
      (n) => n.level === line.level - 1 && n.index === line.id / (line.n / 2),
    );
    expect(r.stdout).toContain(`${line.id}+${line.n / 2}|${left?.text}`);

    const m = messages[3] as Message;
    const one = await outline("zoom", thread, "3", "1");
    expect(one.code).toBe(0);
    expect(one.stdout).toContain(`#3 ${m.id} ${m.from}`);
    expect(one.stdout).toContain(m.text);

    const bad = await outline("zoom", thread, "8", "3");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("N_NOT_POWER_OF_TWO");
    const unknown = await outline("zoom", "nobody-here", "0", "1");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("THREAD_NOT_FOUND");
  });
});

/** The worker's tombstone of `target`: its actor state as a thread.deleted leaves it. */
async function tombstone(target: string): Promise<void> {
  const buckets = await ensureWorkerBuckets(js, jsm, names);
  const core = deleteThread(initialThreadState(target, DEFAULT_SETTINGS));
  const record = toPersisted(target, 3, false, { context: { core } });
  await buckets.actors.put(target, JSON.stringify(record));
}

describe("a deleted thread", () => {
  it("takes no line of an import, on any run: each is bad, none published", async () => {
    const target = `${thread}-gone`;
    await tombstone(target);
    const line = (t: string, i: number) => JSON.stringify(makeMessage(t, i, `m ${i}`));
    const file = [line(target, 0), line(`${thread}-alive`, 0), line(target, 1)].join("\n");
    for (const run of [1, 2]) {
      const r = await outlineWith(file, ["import", "-"]);
      expect({ run, code: r.code }).toEqual({ run, code: 1 });
      const said = r.stderr.split("\n").filter((l) => l.startsWith("line "));
      expect(said).toEqual(
        [1, 3].map(
          (n) =>
            `line ${n}: thread '${target}' was deleted; its id takes no new messages (use a new thread id)`,
        ),
      );
      expect(r.stdout).toMatch(/3 lines: [01] published, [01] already stored, 2 bad; /);
    }
    const info = await jsm.streams.info(names.chatStream, {
      subjects_filter: subjects(names).messageCreated(target),
    });
    expect(info.state.subjects?.[subjects(names).messageCreated(target)]).toBeUndefined();
  });
});

describe("outline send to a deleted thread", () => {
  it("refuses it, with text or from stdin, exit code 1, and publishes nothing", async () => {
    const target = `${thread}-sent-gone`;
    await tombstone(target);
    const said = `outline send: thread '${target}' was deleted; its id takes no new messages (use a new thread id)\n`;
    const one = await outline("send", target, "hello?");
    expect(one).toEqual({ code: 1, stdout: "", stderr: said });
    const piped = await outlineWith("first\nsecond\n", ["send", target]);
    expect(piped).toEqual({ code: 1, stdout: "", stderr: said });
    const info = await jsm.streams.info(names.chatStream, {
      subjects_filter: subjects(names).messageCreated(target),
    });
    expect(info.state.subjects?.[subjects(names).messageCreated(target)]).toBeUndefined();
  });
});

describe("outline send from stdin, import, dead", () => {
  it("sends each line of stdin as a message, skipping blank lines", async () => {
    const target = `${thread}-stdin`;
    const r = await outlineWith("first line\n\n  \nsecond line\n", [
      "send",
      target,
      "--from",
      "Bo",
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(2);
    const info = await jsm.streams.info(names.chatStream, {
      subjects_filter: subjects(names).messageCreated(target),
    });
    expect(info.state.subjects?.[subjects(names).messageCreated(target)]).toBe(2);
  });

  it("stops at a stdin line that is not UTF-8, naming its byte: it and the later lines unsent", async () => {
    const target = `${thread}-stdin-latin1`;
    // Latin-1 "café": the é is the one byte 0xE9 (UTF-8 writes it 0xC3 0xA9).
    const latin1 = Buffer.concat([
      Buffer.from("first\r\ncaf"),
      Buffer.from([0xe9]),
      Buffer.from(" au lait\nthird\n"),
    ]);
    const r = await outlineWith(latin1, ["send", target]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^sent \S+ to /);
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toBe(
      "outline send: line 2 of stdin is not valid UTF-8 at byte 3 (0xE9): not sent, nor the lines after it (1 message was sent before it); convert the input to UTF-8 (e.g. iconv -f latin1 -t utf-8) and send from line 2 on\n",
    );
    expect((await storedMessages(jsm, names, target, 1)).map((m) => m.message.text)).toEqual([
      "first",
    ]);
    const subject = subjects(names).messageCreated(target);
    const sent = await jsm.streams.info(names.chatStream, { subjects_filter: subject });
    expect(sent.state.subjects?.[subject]).toBe(1);
    // Bad from the first line: nothing at all.
    const first = await outlineWith(Buffer.from([0x61, 0xff, 0x0a]), ["send", `${target}-2`]);
    expect(first).toMatchObject({ code: 1, stdout: "" });
    expect(first.stderr).toMatch(
      /line 1 of stdin is not valid UTF-8 at byte 1 \(0xFF\): .*\(0 messages were sent before it\)/,
    );
    const other = subjects(names).messageCreated(`${target}-2`);
    const info = await jsm.streams.info(names.chatStream, { subjects_filter: other });
    expect(info.state.subjects?.[other]).toBeUndefined();
  });

  it("imports a file: summary on stdout, bad lines by number on stderr, exit 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "outline-cli-import-"));
    try {
      const target = `${thread}-import`;
      const good = [0, 1, 2].map((i) =>
        JSON.stringify(makeMessage(target, i, `imported message ${i}`)),
      );
      const file = join(dir, "in.jsonl");
      writeFileSync(file, [good[0], good[1], '{"id": 1}', good[2]].join("\n"));
      const r = await outline("import", file);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^line 3: /m);
      expect(r.stdout).toMatch(
        /^import .*in\.jsonl: 4 lines: 3 published, 0 already stored, 1 bad; /,
      );
      const again = await outlineWith(good.join("\n"), ["import", "-"]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain("import stdin: 3 lines: 0 published, 3 already stored, 0 bad");
      // Once the worker has applied them (its buckets and snapshot as it leaves them, the tail
      // the whole thread): not published at all.
      const { kv } = await ensureTopology(nc, names);
      await ensureWorkerBuckets(js, jsm, names);
      const log = await storedMessages(jsm, names, target, good.length);
      const young = replayWithNodes(target, DEFAULT_SETTINGS, log);
      expect(young.state).toMatchObject({ boundary: 0, complete: true });
      await publishState(js, kv, names, young.state, young.nodes);
      const applied = await outlineWith(good.join("\n"), ["import", "-"]);
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toContain(
        "import stdin: 3 lines: 0 published, 0 already stored, 3 already applied, 0 bad",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reports a line that is not UTF-8 as bad and does not publish it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "outline-cli-utf8-"));
    try {
      const target = `${thread}-utf8`;
      const [a, b, c] = [0, 1, 2].map((i) =>
        JSON.stringify(makeMessage(target, i, `imported message ${i}`)),
      );
      const [head, tail] = (b ?? "").split("imported");
      const file = join(dir, "latin.jsonl");
      writeFileSync(
        file,
        Buffer.concat([
          Buffer.from(`${a}\n${head}`),
          Buffer.from([0xff, 0xfe]),
          Buffer.from(`imported${tail}\n${c}\n`),
        ]),
      );
      const r = await outline("import", file);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^line 2: not valid UTF-8/m);
      expect(r.stdout).toMatch(/: 3 lines: 2 published, 0 already stored, 1 bad; /);
      const info = await jsm.streams.info(names.chatStream, {
        subjects_filter: subjects(names).messageCreated(target),
      });
      expect(info.state.subjects?.[subjects(names).messageCreated(target)]).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("warns of a message id that comes again with other content; the first is kept", async () => {
    const target = `${thread}-repeat`;
    const m = (i: number, text: string) => JSON.stringify(makeMessage(target, i, text));
    const file = [m(0, "kept"), m(0, "kept"), m(0, "dropped"), m(1, "other")].join("\n");
    const r = await outlineWith(file, ["import", "-"]);
    expect(r.code, r.stderr).toBe(0);
    const id = makeMessage(target, 0, "").id;
    const warnings = r.stderr.split("\n").filter((l) => l.startsWith("line "));
    expect(warnings).toEqual([
      `line 3: message id '${id}' of thread '${target}' was on line 1 with other content; line 1's is kept (a message id is applied once): give this one a new id`,
    ]);
    expect(r.stdout).toContain("4 lines: 2 published, 2 already stored, 0 bad");
  });

  it("says in one line that a FILE to import cannot be read, with exit code 2", async () => {
    const missing = join(tmpdir(), `outline-no-such-${Date.now()}.jsonl`);
    const r = await outline("import", missing);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`outline import: cannot read ${missing}: no such file\n`);
    expect(r.stdout).toBe("");
  });

  it("lists dead letters with reason, time, subject and first bytes; filters by thread", async () => {
    const s = subjects(names);
    for (const [t, seq] of [
      ["dead-a", 11],
      ["dead-b", 12],
      ["dead-a", 13],
    ] as const) {
      await publishDeadLetter(js, names, {
        reason: `bad body of ${t}`,
        subject: s.messageCreated(t),
        data: new TextEncoder().encode(`{"broken": "${t}" ${"x".repeat(300)}`),
        seq,
      });
    }
    const all = await outline("dead");
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain(`${s.messageCreated("dead-a")}  (${names.chatStream} #11)`);
    expect(all.stdout).toContain("reason:   bad body of dead-b");
    expect(all.stdout).toMatch(/^\d{4}-\d\d-\d\dT\S+Z {2}/m);
    expect(all.stdout).toContain('original: "{\\"broken\\": \\"dead-a\\" xxx');
    expect(all.stdout).toContain(`(first of ${20 + 300} bytes)`);
    const one = await outline("dead", "--thread", "dead-b", "--json");
    const entries = one.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { thread: string; seq: number; reason: string });
    expect(entries).toEqual([expect.objectContaining({ thread: "dead-b", seq: 12 })]);
    // An id no thread can have is an error, not an empty list.
    const badId = await outline("dead", "--thread", "dead.b");
    expect(badId.code).toBe(2);
    expect(badId.stderr).toContain("'dead.b' is invalid: a thread id is 1–128 characters");
    const none = await outline("dead", "--since", "2099-01-01T00:00Z");
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain("0 dead letters");
    const bad = await outline("dead", "--since", "yesterday");
    expect(bad.code).toBe(2);
    // The newest of them, unfiltered (read from the stream's end) and by thread.
    const last = await outline("dead", "--limit", "1", "--json");
    expect(
      last.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { seq: number }),
    ).toEqual([expect.objectContaining({ thread: "dead-a", seq: 13 })]);
    const lastOfB = await outline("dead", "--thread", "dead-b", "--limit", "5");
    expect(lastOfB.stdout).toContain(`(${names.chatStream} #12)`);
    expect(lastOfB.stdout).not.toContain("dead-a");
    const twoOfA = await outline("dead", "--thread", "dead-a", "--limit", "2");
    expect(twoOfA.stdout.indexOf("#11)")).toBeGreaterThan(-1);
    expect(twoOfA.stdout.indexOf("#13)")).toBeGreaterThan(twoOfA.stdout.indexOf("#11)"));
    const oneOfA = await outline("dead", "--thread", "dead-a", "--limit", "1");
    expect(oneOfA.stdout).toContain(`(${names.chatStream} #13)`);
    expect(oneOfA.stdout).not.toContain("#11)");
    expect(oneOfA.stderr).toContain("1 dead letter (thread dead-a, the newest 1)");
    expect((await outline("dead", "--limit", "0")).code).toBe(2);
  });

  it("lists the letters of a DEAD stream made with one subject beside the new ones, after its upgrade", async () => {
    const old = uniqueNames();
    const s = subjects(old);
    // DEAD and its letters as the version with one dead-letter subject left them.
    await jsm.streams.add({
      name: old.deadStream,
      subjects: [old.deadSubject],
      storage: StorageType.File,
    });
    const oldLetter = async (subject: string, seq: number) => {
      const h = headers();
      h.set(DEAD_LETTER_HEADERS.reason, `old reason ${seq}`);
      h.set(DEAD_LETTER_HEADERS.subject, subject);
      h.set(DEAD_LETTER_HEADERS.stream, old.chatStream);
      h.set(DEAD_LETTER_HEADERS.seq, String(seq));
      await js.publish(old.deadSubject, `old bytes ${seq}`, { headers: h });
    };
    await oldLetter(s.messageCreated("old-a"), 1);
    await oldLetter(s.messageCreated("old-b"), 2);
    // An unknown event type still names its thread.
    await oldLetter(`${old.chatPrefix}.old-a.message.edited`, 3);

    // A worker of this version starts: the stream is upgraded, new letters go per thread.
    const upgraded = await ensureTopology(nc, old);
    for (const [thread, seq] of [
      ["old-a", 4],
      ["old-b", 5],
    ] as const) {
      await publishDeadLetter(upgraded.js, old, {
        reason: `new reason ${seq}`,
        subject: s.messageCreated(thread),
        data: new TextEncoder().encode(`new bytes ${seq}`),
        seq,
      });
    }
    // An older worker still running during the upgrade records one more on the shared subject.
    await oldLetter(s.messageCreated("old-a"), 6);
    const seqsOf = (run: Run) =>
      run.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { thread: string | null; seq: number })
        .map((e) => `${e.thread}#${e.seq}`);

    const all = await outlineNamed(old, "dead", "--json");
    expect(all.code, all.stderr).toBe(0);
    expect(seqsOf(all)).toEqual(["old-a#1", "old-b#2", "old-a#3", "old-a#4", "old-b#5", "old-a#6"]);
    const text = await outlineNamed(old, "dead");
    expect(text.stdout).toContain("reason:   old reason 1");
    expect(text.stdout).toContain('original: "old bytes 1"');
    expect(text.stderr).toContain("6 dead letters; 6 in stream");
    // By thread: its letters on the shared subject and on its own, read apart, in stream order.
    const a = await outlineNamed(old, "dead", "--thread", "old-a", "--json");
    expect(seqsOf(a)).toEqual(["old-a#1", "old-a#3", "old-a#4", "old-a#6"]);
    const b = await outlineNamed(old, "dead", "--thread", "old-b", "--limit", "1", "--json");
    expect(seqsOf(b)).toEqual(["old-b#5"]);
    const newestOfA = await outlineNamed(old, "dead", "--thread", "old-a", "--limit", "2");
    expect(newestOfA.stdout).toContain("new reason 4");
    expect(newestOfA.stdout.indexOf("old reason 6")).toBeGreaterThan(
      newestOfA.stdout.indexOf("new reason 4"),
    );
    expect(newestOfA.stdout).not.toContain("old reason 3");
  });

  it("exits quietly when its reader goes away (| head)", async () => {
    const r = await outlineWith("", ["outline", thread], true);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  });
});
