/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-assignment,
   @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument,
   @typescript-eslint/no-unsafe-call --
   replies are JSON read as the wire gives them; expect() checks their shape, which is the point. */
import { spawn } from "node:child_process";
import { request } from "node:http";
import { jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Message } from "../shared/events.ts";
import type { SummaryEvent } from "../shared/history.ts";
import { joinedText } from "../shared/render.ts";
import {
  buildOpenAIPrompt,
  LINES_PER_BLOCK,
  OUTLINE_HEADER,
  type AnthropicTextBlock,
  type OpenAIMessage,
} from "../shared/prompt.ts";
import { toSnapshot, type OutlineSnapshot } from "../shared/snapshot.ts";
import type { ThreadState } from "../shared/thread.ts";
import { NAME_VARIABLES, type InfraNames, type NameKey } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology, subjects } from "../services/nats/topology.ts";
import { apiToken } from "../services/api/access.ts";
import { natsHealth } from "../services/prompt-builder/health.ts";
import { createHttpServer, listen } from "../services/prompt-builder/http.ts";
import { createMetrics } from "../services/prompt-builder/metrics.ts";
import { createOperations } from "../services/prompt-builder/operations.ts";
import type { Operations } from "../services/api/operations-interface.ts";
import { createReader } from "../services/nats/reader.ts";
import { ZOOM_TOOL } from "../services/api/tools.ts";
import { freePort } from "../services/util/processes.ts";
import { makeMessage } from "./support/conversation.ts";
import {
  publishMessages,
  publishState,
  replayWithNodes,
  uniqueNames,
} from "./support/outline-fixture.ts";
import { SMALL_SETTINGS, startTestApi, type TestApi } from "./support/prompt-builder-api.ts";

const SETTINGS = SMALL_SETTINGS;
const N = 240; // messages in CHAT
const K = 200; // messages the snapshot reflects; the rest are newer than it
const BIG = 30; // position of a 90,000-character message (inside the outline)
const BIG_TEXT = Array.from({ length: 9_000 }, (_, k) => String(k).padStart(9, "0") + "|").join("");

const url = () => {
  const value = process.env.NATS_URL;
  if (!value) throw new Error("NATS_URL is unset: run through vitest's globalSetup");
  return value;
};

function conversation(thread: string, count: number): Message[] {
  return Array.from({ length: count }, (_, i) => {
    const text =
      i === BIG
        ? BIG_TEXT
        : `message ${i} about topic ${i % 7}: ${"the quick brown fox jumps over the lazy dog ".repeat(1 + (i % 5))}`;
    const m = makeMessage(thread, i, text);
    // The agent's own messages carry model state, to check it is sent back only after cutAt.
    return m.from === "north" ? { ...m, role: "assistant", state: { step: i } } : m;
  });
}

interface Reply {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

let nc: NatsConnection;
let js: JetStreamClient;
let kv: KV;
let names: InfraNames;
let operations: Operations;
let api: TestApi | undefined;
let base: string;
const thread = `t-${Date.now().toString(36)}`;
let messages: Message[];
let seqs: number[];
let state: ThreadState;
let nodes: SummaryEvent[];
let snapshot: OutlineSnapshot;

async function get(path: string, init: RequestInit = {}, at = base): Promise<Reply> {
  const res = await fetch(`${at}${path}`, init);
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text, headers: res.headers };
}

const nodeOf = (level: number, index: number) => {
  const node = nodes.find((n) => n.level === level && n.index === index);
  if (!node) throw new Error(`fixture has no node ${level}:${index}`);
  return node;
};

/** What the prompt's messages after the outline must be: the snapshot's tail, then the newer ones. */
const wholeAfterOutline = () => messages.slice(state.boundary, N);

beforeAll(async () => {
  nc = await connectNats({ url: url(), name: "prompt-builder-test" });
  names = uniqueNames();
  ({ js, kv } = await ensureTopology(nc, names));
  messages = conversation(thread, N);
  const log = await publishMessages(js, names, messages);
  seqs = log.map((l) => l.seq);
  ({ state, nodes } = replayWithNodes(thread, SETTINGS, log.slice(0, K)));
  await publishState(js, kv, names, state, nodes);
  snapshot = toSnapshot(state);
  // Past the dedupe window a platform retry is stored again; and a malformed event may be stored.
  const s = subjects(names);
  await js.publish(s.messageCreated(thread), JSON.stringify(messages[K + 1]), { msgID: "retry-1" });
  await js.publish(s.messageCreated(thread), "{not json", { msgID: "bad-1" });

  api = await startTestApi(nc, names);
  ({ operations, base } = api);
});

afterAll(async () => {
  await api?.close();
  await nc?.close();
});

describe("fixture", () => {
  it("has cuts, merged lines, the big message in the outline, and messages newer than the snapshot", () => {
    expect(state.count).toBe(K);
    expect(state.boundary).toBeGreaterThan(BIG);
    expect(state.cutAt).not.toBeNull();
    expect(snapshot.lines.some((l) => l.n >= 4)).toBe(true);
    expect(snapshot.seq).toBe(seqs[K - 1]);
  });
});

describe("GET /threads/{t}/prompt", () => {
  it("lays out the header, <chat>, the outline's lines, then every later message whole, newer ones included", async () => {
    const r = await get(`/threads/${thread}/prompt?agent=north`);
    expect(r.status).toBe(200);
    const [outline, ...rest] = r.body.messages as OpenAIMessage[];
    expect(outline?.role).toBe("user");
    const content = outline?.content ?? "";
    expect(content.startsWith(`${OUTLINE_HEADER}\n<chat>\n`)).toBe(true);
    expect(content.endsWith("\n</chat>")).toBe(true);
    const shown = content
      .slice(OUTLINE_HEADER.length + "\n<chat>\n".length, -"\n</chat>".length)
      .split("\n");
    expect(shown).toEqual(snapshot.lines.map((l) => `${l.id}+${l.n}|${l.text}`));

    const whole = wholeAfterOutline();
    // The retried duplicate and the malformed event are not messages of the thread.
    expect(rest).toHaveLength(whole.length);
    for (const [i, m] of whole.entries()) {
      const got = rest[i] as OpenAIMessage;
      if (m.from === "north") expect(got).toMatchObject({ role: "assistant", content: m.text });
      else expect(got).toMatchObject({ role: "user", content: `${m.from}: ${m.text}` });
    }
    expect(r.body.stats).toMatchObject({
      lines: snapshot.lines.length,
      outlineBytes: snapshot.bytes,
      newerThanSnapshot: N - K,
      snapshotSeq: snapshot.seq,
    });
    expect(r.body.messages).toEqual(
      buildOpenAIPrompt({
        agent: "north",
        lines: snapshot.lines,
        cutAt: snapshot.cutAt,
        tail: whole,
      }).messages,
    );
  });

  it("sends the agent's state back only for messages written after cutAt", async () => {
    const r = await get(`/threads/${thread}/prompt?agent=north`);
    const rest = (r.body.messages as OpenAIMessage[]).slice(1);
    const cutAt = Date.parse(snapshot.cutAt ?? "");
    let kept = 0;
    let stripped = 0;
    for (const [i, m] of wholeAfterOutline().entries()) {
      if (m.from !== "north") continue;
      const got = rest[i] as OpenAIMessage;
      if (Date.parse(m.at) > cutAt) {
        expect(got.state).toEqual(m.state);
        kept += 1;
      } else {
        expect(got.state).toBeUndefined();
        stripped += 1;
      }
    }
    expect(kept).toBeGreaterThan(0);
    expect(stripped).toBeGreaterThan(0);
  });

  it("leaves out lines and messages older than `from`", async () => {
    const middle = snapshot.lines[Math.floor(snapshot.lines.length / 2)];
    if (!middle) throw new Error("no lines");
    const r = await get(
      `/threads/${thread}/prompt?agent=north&from=${encodeURIComponent(middle.until)}`,
    );
    expect(r.status).toBe(200);
    const content = (r.body.messages[0] as OpenAIMessage).content;
    const kept = snapshot.lines.filter((l) => Date.parse(l.until) >= Date.parse(middle.until));
    expect(kept.length).toBeLessThan(snapshot.lines.length);
    expect(r.body.stats.lines).toBe(kept.length);
    expect(content).toContain(`${middle.id}+${middle.n}|`);
    expect(content).not.toContain(`\n${snapshot.lines[0]?.id}+${snapshot.lines[0]?.n}|`);

    const late = messages[N - 3] as Message;
    const r2 = await get(
      `/threads/${thread}/prompt?agent=north&from=${encodeURIComponent(late.at)}`,
    );
    expect((r2.body.messages as OpenAIMessage[]).map((m) => m.content)).toEqual(
      messages.slice(N - 3).map((m) => (m.from === "north" ? m.text : `${m.from}: ${m.text}`)),
    );
  });

  it("gives Anthropic blocks of 4 lines with a cache mark on the last whole block", async () => {
    const openai = await get(`/threads/${thread}/prompt?agent=north`);
    const r = await get(`/threads/${thread}/prompt?agent=north&format=anthropic`);
    expect(r.status).toBe(200);
    const blocks = r.body.messages[0].content as AnthropicTextBlock[];
    expect(blocks.map((b) => b.text).join("")).toBe(openai.body.messages[0].content);
    const lastWhole = Math.floor(snapshot.lines.length / LINES_PER_BLOCK);
    const marked = blocks.flatMap((b, i) => (b.cache_control ? [i] : []));
    expect(marked).toEqual([lastWhole - 40, lastWhole - 20, lastWhole].filter((i) => i >= 1));
    expect(r.body.messages.slice(1)).toEqual(openai.body.messages.slice(1));
  });

  it("leaves the oldest whole messages out past the tail cap, with a note naming them", async () => {
    const capped = await createOperations(createReader(nc, names), { tailCap: 300 }).prompt({
      thread,
      agent: "north",
    });
    const pending = (capped.stats as { pending: number }).pending;
    expect(pending).toBeGreaterThan(0);
    const note = (capped.messages[1] as OpenAIMessage).content;
    expect(note).toContain(`${state.boundary} to ${state.boundary + pending - 1}`);
    expect(capped.messages.at(-1)).toMatchObject({ content: `Ana: ${messages[N - 1]?.text}` });
  });

  it("gives a thread without a snapshot all its messages whole", async () => {
    const fresh = `${thread}-fresh`;
    const few = conversation(fresh, 3);
    await publishMessages(js, names, few);
    const r = await get(`/threads/${fresh}/prompt?agent=north`);
    expect(r.status).toBe(200);
    expect((r.body.messages as OpenAIMessage[]).map((m) => m.content)).toEqual(
      few.map((m) => (m.from === "north" ? m.text : `${m.from}: ${m.text}`)),
    );
    const outline = await get(`/threads/${fresh}/outline`);
    expect(outline.body).toMatchObject({
      thread: fresh,
      count: 3,
      boundary: 0,
      lines: [],
      tail: few.map((m) => m.id),
    });
    const zoom = await get(`/threads/${fresh}/zoom?id=1&n=1`);
    expect(zoom.body.message).toMatchObject({ id: few[1]?.id, position: 1, text: few[1]?.text });
    const past = await get(`/threads/${fresh}/zoom?id=0&n=2`);
    expect(past.body.error.code).toBe("ID_PAST_OUTLINE");
  });

  it("rejects bad arguments with 400 and the argument named", async () => {
    const fmt = await get(`/threads/${thread}/prompt?format=xml`);
    expect(fmt.status).toBe(400);
    expect(fmt.body.error).toMatchObject({ code: "BAD_FORMAT" });
    expect(fmt.body.error.message).toContain("openai");
    const from = await get(`/threads/${thread}/prompt?from=yesterday`);
    expect(from.status).toBe(400);
    expect(from.body.error.code).toBe("BAD_FROM");
  });
});

describe("GET /threads/{t}/zoom", () => {
  it("opens a line into the two lines it was made from, read from HISTORY", async () => {
    const line = snapshot.lines.find((l) => l.n >= 4);
    if (!line) throw new Error("no merged line");
    const half = line.n / 2;
    const level = Math.log2(half);
    const r = await get(`/threads/${thread}/zoom?id=${line.id}&n=${line.n}`);
    expect(r.status).toBe(200);
    const left = nodeOf(level, line.id / half);
    const right = nodeOf(level, line.id / half + 1);
    expect(r.body).toEqual({
      lines: [
        { id: line.id, n: half, text: left.text, until: left.until },
        { id: line.id + half, n: half, text: right.text, until: right.until },
      ],
    });
    // And one level further down, inside the line.
    const deeper = await get(`/threads/${thread}/zoom?id=${line.id + half}&n=${half}`);
    expect(deeper.body.lines.map((l: { id: number }) => l.id)).toEqual([
      line.id + half,
      line.id + half + half / 2,
    ]);
  });

  it("joins a node it does not find on HISTORY from its halves: a free parent, never published", async () => {
    const published = new Set(nodes.map((n) => `${n.level}:${n.index}`));
    const builtOf = (level: number, index: number): { text: string; until: string } => {
      if (published.has(`${level}:${index}`)) return nodeOf(level, index);
      const [left, right] = [builtOf(level - 1, index * 2), builtOf(level - 1, index * 2 + 1)];
      return { text: joinedText(left.text, right.text), until: right.until };
    };
    // A free parent under a line of a higher level: zooming into its pair's range reads it.
    const free = snapshot.lines.flatMap((line) => {
      const refs: { level: number; index: number }[] = [];
      for (let level = 1; 2 ** level < line.n; level++)
        for (let id = line.id; id < line.id + line.n; id += 2 ** level)
          if (!published.has(`${level}:${id / 2 ** level}`))
            refs.push({ level, index: id / 2 ** level });
      return refs;
    })[0];
    if (!free) throw new Error("the fixture has no free parent under a line");
    const n = 2 ** free.level;
    const id = free.index * n;
    const r = await get(`/threads/${thread}/zoom?id=${id - (id % (2 * n))}&n=${2 * n}`);
    expect(r.status).toBe(200);
    const line = (r.body.lines as { id: number; text: string; until: string }[]).find(
      (l) => l.id === id,
    );
    expect(line).toEqual({ id, n, ...builtOf(free.level, free.index) });
    const stored = await (
      await jetstreamManager(nc)
    ).direct.getMessage(names.historyStream, {
      last_by_subj: subjects(names).historyNode(thread, free.level, free.index),
    });
    expect(stored).toBeNull();
  });

  it("gives a message whole from the outline, the tail and past the snapshot", async () => {
    for (const position of [5, state.boundary, K + 3, N - 1]) {
      const m = messages[position] as Message;
      const r = await get(`/threads/${thread}/zoom?id=${position}&n=1`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        message: { id: m.id, position, from: m.from, role: m.role, at: m.at, text: m.text },
        page: { offset: 0, limit: 25_000, total: m.text.length, next: null },
      });
    }
  });

  it("pages a 90,000-character message in 25,000-character pages with the next offset", async () => {
    let offset = 0;
    let text = "";
    const nexts: (number | null)[] = [];
    for (;;) {
      const r = await get(
        `/threads/${thread}/zoom?id=${BIG}&n=1${offset ? `&offset=${offset}` : ""}`,
      );
      expect(r.status).toBe(200);
      expect(r.body.page.total).toBe(90_000);
      text += r.body.message.text;
      nexts.push(r.body.page.next);
      if (r.body.page.next === null) {
        expect(r.body.note).toContain("last page");
        break;
      }
      expect(r.body.note).toContain(`offset ${r.body.page.next}`);
      offset = r.body.page.next;
    }
    expect(nexts).toEqual([25_000, 50_000, 75_000, null]);
    expect(text).toBe(BIG_TEXT);
    const small = await get(`/threads/${thread}/zoom?id=${BIG}&n=1&offset=100&limit=50`);
    expect(small.body.message.text).toBe(BIG_TEXT.slice(100, 150));
    expect(small.body.page).toEqual({ offset: 100, limit: 50, total: 90_000, next: 150 });
  });

  it("answers 400 with the rule broken for every bad zoom", async () => {
    const pastOutline = state.boundary % 2 === 0 ? state.boundary : state.boundary + 1;
    const cases: [string, string][] = [
      ["id=8&n=3", "N_NOT_POWER_OF_TWO"],
      ["id=6&n=4", "ID_NOT_MULTIPLE_OF_N"],
      [`id=${N + 5}&n=1`, "ID_PAST_END"],
      [`id=${pastOutline}&n=2`, "ID_PAST_OUTLINE"],
      ["id=abc&n=1", "NOT_A_NUMBER"],
      ["id=1.5&n=1", "NOT_A_NUMBER"],
      ["id=-1&n=1", "BAD_ID"],
      ["id=0", "MISSING_ARGUMENT"],
      ["id=0&n=2&offset=5", "PAGE_ON_LINE"],
      ["id=0&n=1&limit=0", "BAD_PAGE"],
      ["id=0&n=1&offset=999999", "BAD_PAGE"],
      ["id=99999999999999999999&n=1", "BAD_ID"],
    ];
    for (const [query, code] of cases) {
      const r = await get(`/threads/${thread}/zoom?${query}`);
      expect({ query, status: r.status, code: r.body?.error?.code }).toEqual({
        query,
        status: 400,
        code,
      });
      expect(r.body.error.message.length).toBeGreaterThan(10);
    }
  });
});

describe("outline, tools and errors", () => {
  it("serves the snapshot as stored", async () => {
    const r = await get(`/threads/${thread}/outline`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(snapshot);
  });

  it("lists the zoom tool as an OpenAI tool definition (search is off)", async () => {
    const r = await get(`/threads/${thread}/tools`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual([ZOOM_TOOL]);
    const [zoom] = r.body;
    expect(zoom.function.name).toBe("zoom");
    expect(zoom.function.parameters.required).toEqual(["id", "n"]);
    expect(Object.keys(zoom.function.parameters.properties)).toEqual([
      "id",
      "n",
      "offset",
      "limit",
    ]);
    expect(zoom.function.description).toMatch(/power of two/);
    expect(zoom.function.description).toMatch(/25000/);
  });

  it("answers 501 for search while it is off, 400 first for a missing q", async () => {
    const off = await get(`/threads/${thread}/search?q=x`);
    expect(off.status).toBe(501);
    expect(off.body.error.code).toBe("SEARCH_OFF");
    expect(off.body.error.message).toContain("HISTORY_SEARCH");
    const noQuery = await get(`/threads/${thread}/search`);
    expect(noQuery.status).toBe(400);
    expect(noQuery.body.error.code).toBe("MISSING_QUERY");
  });

  it("answers 404 for an unknown thread on every operation", async () => {
    for (const op of ["prompt", "zoom?id=0&n=1", "outline", "tools"]) {
      const r = await get(`/threads/nobody-here/${op}`);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("THREAD_NOT_FOUND");
      expect(r.body.error.message).toContain("nobody-here");
    }
  });

  it("answers 400 for a bad thread id, 404 for an unknown route, 405 for other methods", async () => {
    for (const bad of ["bad.id", "x".repeat(129), "%ZZ", "a%20b", "a*"]) {
      const r = await get(`/threads/${bad}/prompt`);
      expect({ bad, status: r.status, code: r.body?.error?.code }).toEqual({
        bad,
        status: 400,
        code: "BAD_THREAD_ID",
      });
    }
    const route = await get(`/threads/${thread}/nothing`);
    expect(route.status).toBe(404);
    expect(route.body.error.code).toBe("NO_SUCH_ROUTE");
    // It lists what this server serves: no explorer, search or cluster view was given it.
    expect(route.body.error.message).toContain("/threads/{thread}/prompt");
    expect(route.body.error.message).toContain("/healthz");
    for (const absent of ["/ui/", "explorer", "/search", "/cluster"])
      expect(route.body.error.message).not.toContain(absent);
    // No explorer served here: / has nowhere to lead, so it is an unknown route too.
    const root = await get("/", { redirect: "manual" });
    expect([root.status, root.body.error.code]).toEqual([404, "NO_SUCH_ROUTE"]);
    const post = await get(`/threads/${thread}/prompt`, { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.body.error.code).toBe("METHOD_NOT_ALLOWED");
    expect(post.body.error.message).not.toContain("/ui/");
  });

  it("refuses huge requests with 414, 431 or 413 and a JSON error", async () => {
    const long = await get(`/threads/${thread}/prompt?agent=${"a".repeat(20_000)}`);
    expect(long.status).toBe(414);
    expect(long.body.error.code).toBe("URI_TOO_LONG");
    const huge = await get(`/threads/${thread}/prompt?agent=${"a".repeat(100_000)}`);
    expect(huge.status).toBe(431);
    expect(huge.body.error.code).toBe("HEADERS_TOO_LARGE");
    // fetch will not send a GET body, so the body limit is checked with a raw request.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${base}/threads/${thread}/prompt`, {
        method: "GET",
        headers: { "content-length": "1000000" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end("x".repeat(10));
    });
    expect(status).toBe(413);
  });
});

describe("healthz and metrics", () => {
  it("reports NATS connectivity", async () => {
    const r = await get("/healthz");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ok: true, nats: { connected: true } });
    const closed = await connectNats({ url: url(), name: "closed" });
    await closed.close();
    expect(await natsHealth(closed).check()).toMatchObject({
      ok: false,
      nats: { connected: false },
    });
  });

  it("serves Prometheus text with request counters, and the worker's when one answers", async () => {
    await get(`/threads/${thread}/outline`);
    const alone = await get("/metrics");
    expect(alone.status).toBe(200);
    expect(alone.headers.get("content-type")).toContain("text/plain");
    expect(alone.text).toMatch(
      /outline_api_requests_total\{op="outline",transport="http",status="200"\} \d+/,
    );
    expect(alone.text).toContain("outline_api_request_seconds_bucket");
    expect(alone.text).toContain("# worker metrics unavailable");

    const worker = nc.subscribe(`${names.apiPrefix}.metrics.worker`, {
      callback: (_err, msg) => {
        msg.respond(
          "# TYPE outline_worker_events_applied_total counter\noutline_worker_events_applied_total 7\n",
        );
      },
    });
    try {
      const both = await get("/metrics");
      expect(both.text).toContain("outline_worker_events_applied_total 7");
      expect(both.text).not.toContain("worker metrics unavailable");
    } finally {
      worker.unsubscribe();
    }
  });
});

describe("NATS request/reply API", () => {
  const request = async (op: string, body: unknown) => {
    const reply = await nc.request(
      `${names.apiPrefix}.${op}`,
      typeof body === "string" ? body : JSON.stringify(body),
      {
        timeout: 5_000,
      },
    );
    return { status: Number(reply.headers?.get("Outline-Status")), body: reply.json<any>() };
  };

  it("gives the same answers as HTTP", async () => {
    const pairs: [string, Record<string, unknown>, string][] = [
      [
        "prompt",
        { thread, agent: "north", format: "anthropic" },
        `/threads/${thread}/prompt?agent=north&format=anthropic`,
      ],
      ["zoom", { thread, id: 8, n: 8 }, `/threads/${thread}/zoom?id=8&n=8`],
      [
        "zoom",
        { thread, id: BIG, n: 1, offset: 25_000 },
        `/threads/${thread}/zoom?id=${BIG}&n=1&offset=25000`,
      ],
      ["outline", { thread }, `/threads/${thread}/outline`],
      ["tools", { thread }, `/threads/${thread}/tools`],
      ["zoom", { thread, id: 8, n: 3 }, `/threads/${thread}/zoom?id=8&n=3`],
      ["prompt", { thread: "nobody-here" }, `/threads/nobody-here/prompt`],
    ];
    for (const [op, body, path] of pairs) {
      const [viaNats, viaHttp] = await Promise.all([request(op, body), get(path)]);
      expect({ op, status: viaNats.status }).toEqual({ op, status: viaHttp.status });
      expect(viaNats.body).toEqual(viaHttp.body);
    }
  });

  it("answers a bad body with a JSON error naming the problem", async () => {
    const notJson = await request("prompt", "{nope");
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe("BAD_JSON");
    const badThread = await request("outline", { thread: "a.b" });
    expect(badThread.body.error.code).toBe("BAD_THREAD_ID");
    const big = await request("prompt", { thread, agent: "x".repeat(70_000) });
    expect(big.status).toBe(413);
  });
});

describe("access", () => {
  it("requires the bearer token on every route but /healthz when one is set", async () => {
    const token = "0123456789abcdef0123456789abcdef";
    const guarded = createHttpServer({
      operations,
      metrics: createMetrics(nc, {
        workerSubject: `${names.apiPrefix}.metrics.worker`,
        workerTimeoutMs: 100,
      }),
      health: natsHealth(nc),
      token,
      log: () => {},
    });
    const address = await listen(guarded, "127.0.0.1", 0);
    const at = `http://127.0.0.1:${address.port}`;
    try {
      const none = await get(`/threads/${thread}/outline`, {}, at);
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe("UNAUTHORIZED");
      expect(none.headers.get("www-authenticate")).toContain("Bearer");
      const wrong = await get(
        `/threads/${thread}/outline`,
        { headers: { authorization: `Bearer ${token.slice(1)}x` } },
        at,
      );
      expect(wrong.status).toBe(401);
      expect((await get("/metrics", {}, at)).status).toBe(401);
      const right = await get(
        `/threads/${thread}/outline`,
        { headers: { authorization: `Bearer ${token}` } },
        at,
      );
      expect(right.status).toBe(200);
      expect((await get("/healthz", {}, at)).status).toBe(200);
    } finally {
      await new Promise((r) => guarded.close(r));
    }
  });

  it("refuses a non-loopback host without OUTLINE_API_TOKEN", () => {
    expect(() => apiToken("0.0.0.0", {})).toThrow(/OUTLINE_API_TOKEN.*0\.0\.0\.0/);
    expect(() => apiToken("::", {})).toThrow(/OUTLINE_API_TOKEN/);
    expect(() => apiToken("0.0.0.0", { OUTLINE_API_TOKEN: "short" })).toThrow(/16 characters/);
    expect(apiToken("127.0.0.1", {})).toBeUndefined();
    expect(apiToken("localhost", {})).toBeUndefined();
    expect(apiToken("0.0.0.0", { OUTLINE_API_TOKEN: "0123456789abcdef0123" })).toBe(
      "0123456789abcdef0123",
    );
  });
});

describe("the service process", () => {
  const nameEnv = () =>
    Object.fromEntries(
      (Object.keys(NAME_VARIABLES) as NameKey[]).map((k) => [NAME_VARIABLES[k], names[k]]),
    );

  function run(env: Record<string, string>) {
    const child = spawn(process.execPath, ["--import", "tsx", "services/prompt-builder/main.ts"], {
      env: { ...process.env, NATS_URL: url(), ...nameEnv(), ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => resolve(code)),
    );
    return { child, exited, stderr: () => stderr };
  }

  it("serves over HTTP and drains on SIGTERM", async () => {
    const port = await freePort();
    const p = run({ HOST: "127.0.0.1", PORT: String(port) });
    const at = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    let up = false;
    while (!up && Date.now() < deadline) {
      up = await fetch(`${at}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (!up) await new Promise((r) => setTimeout(r, 100));
    }
    expect(up, p.stderr()).toBe(true);
    const [viaProcess, inProcess] = await Promise.all([
      get(`/threads/${thread}/prompt?agent=north`, {}, at),
      get(`/threads/${thread}/prompt?agent=north`),
    ]);
    expect(viaProcess.body).toEqual(inProcess.body);
    p.child.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    expect(p.stderr()).toContain("stopped");
  });

  it("refuses to start on 0.0.0.0 without OUTLINE_API_TOKEN", async () => {
    const p = run({ HOST: "0.0.0.0", PORT: String(await freePort()), OUTLINE_API_TOKEN: "" });
    expect(await p.exited).toBe(1);
    expect(p.stderr()).toContain("OUTLINE_API_TOKEN");
  });
});
