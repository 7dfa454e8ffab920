import { request } from "node:http";
import type { NatsConnection } from "@nats-io/transport-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { InfraNames } from "../services/config/names.ts";
import { connectNats } from "../services/nats/connect.ts";
import { ensureTopology } from "../services/nats/topology.ts";
import { makeMessage } from "./support/conversation.ts";
import {
  publishMessages,
  publishState,
  replayWithNodes,
  uniqueNames,
} from "./support/outline-fixture.ts";
import { SMALL_SETTINGS, startTestApi, type TestApi } from "./support/prompt-builder-api.ts";

// Whatever a client sends, the prompt-builder answers 4xx with `{ error: { code, message } }`
// (never a 500, never another thread's data). Two threads share the server: every answer about
// one must hold nothing of the other.

const SETTINGS = SMALL_SETTINGS;

let nc: NatsConnection;
let names: InfraNames;
let api: TestApi | undefined;
let base: string;
const failures: string[] = [];

interface Reply {
  status: number;
  body: { error?: { code?: unknown; message?: unknown } } & Record<string, unknown>;
  text: string;
}

async function get(path: string): Promise<Reply> {
  const res = await fetch(`${base}${path}`);
  const text = await res.text();
  let body: Reply["body"] = {};
  try {
    body = JSON.parse(text) as Reply["body"];
  } catch {
    // Left empty: the assertions below say the body was not JSON.
  }
  return { status: res.status, body, text };
}

/** A 4xx with a JSON error whose code and message say what was wrong. */
function expectClientError(path: string, r: Reply): void {
  expect({ path: path.slice(0, 120), status: r.status >= 400 && r.status < 500 }).toEqual({
    path: path.slice(0, 120),
    status: true,
  });
  expect(typeof r.body.error?.code, `${path.slice(0, 120)}: ${r.text.slice(0, 200)}`).toBe(
    "string",
  );
  expect(String(r.body.error?.message).length).toBeGreaterThan(10);
}

beforeAll(async () => {
  nc = await connectNats({ url: inject("natsUrl"), name: "http-bad-input" });
  names = uniqueNames();
  const { js, kv } = await ensureTopology(nc, names);
  for (const thread of ["alpha", "beta"]) {
    const messages = Array.from({ length: 60 }, (_, i) =>
      makeMessage(
        thread,
        i,
        `${thread}-secret-${i} ${"words about the plan ".repeat(1 + (i % 4))}`,
      ),
    );
    const log = await publishMessages(js, names, messages);
    const { state, nodes } = replayWithNodes(thread, SETTINGS, log);
    await publishState(js, kv, names, state, nodes);
  }
  api = await startTestApi(nc, names, {
    operations: { tailCap: 800 },
    workerTimeoutMs: 200,
    log: (line) => failures.push(line),
  });
  base = api.base;
});

afterAll(async () => {
  await api?.close();
  await nc?.close();
});

describe("HTTP bad input", () => {
  it("bad thread ids on every operation: 400 BAD_THREAD_ID", async () => {
    const bad = [
      "a.b",
      "*",
      ">",
      "a%2Eb",
      "%2A",
      "%3E",
      "x".repeat(200),
      "caf%C3%A9",
      "%00",
      "a%2Fb",
    ];
    for (const id of bad) {
      for (const op of ["prompt", "zoom?id=0&n=1", "outline", "tools"]) {
        const path = `/threads/${id}/${op}`;
        const r = await get(path);
        expectClientError(path, r);
        expect(r.status, path).toBe(400);
        expect(r.body.error?.code, path).toBe("BAD_THREAD_ID");
      }
    }
    // An empty id or a path that escapes /threads/… is no route at all.
    for (const path of [
      "/threads//prompt",
      "/threads/alpha%2F..%2Fbeta/prompt",
      "/threads/alpha/x/prompt",
    ]) {
      const r = await get(path);
      expectClientError(path, r);
      expect(r.text).not.toContain("beta-secret");
    }
  });

  it("zoom arguments out of range or not numbers: 400 naming the rule", async () => {
    const cases = [
      "id=&n=",
      "id=x&n=1",
      "id=0&n=one",
      "id=1e3&n=1",
      "id=0x10&n=1",
      "id=NaN&n=1",
      "id=Infinity&n=1",
      "id=-0&n=0",
      "id=0&n=-2",
      "id=0&n=3",
      "id=4&n=8",
      "id=100000&n=1",
      "id=9007199254740993&n=1",
      "id=99999999999999999999999&n=1",
      "id=0&n=1&offset=-1",
      "id=0&n=1&limit=-5",
      "id=0&n=1&offset=abc",
      "id=0&n=1&limit=1.5",
      "id=0&n=1&id=1",
    ];
    for (const query of cases) {
      const path = `/threads/alpha/zoom?${query}`;
      const r = await get(path);
      // A repeated argument takes its first value: the last case is a valid zoom.
      if (query === "id=0&n=1&id=1") {
        expect(r.status, path).toBe(200);
        continue;
      }
      expectClientError(path, r);
      expect(r.status, path).toBe(400);
    }
  });

  it("prompt arguments of the wrong shape: 400", async () => {
    for (const query of [
      "from=yesterday",
      "from=2026-13-01T00:00:00Z",
      "format=xml",
      `agent=${"a".repeat(300)}`,
      "from=%00",
    ]) {
      const path = `/threads/alpha/prompt?${query}`;
      const r = await get(path);
      expectClientError(path, r);
      expect(r.status, path).toBe(400);
    }
  });

  it("huge query strings and many parameters: 414 or 431 with a JSON error", async () => {
    const many = Array.from({ length: 2_000 }, (_, i) => `p${i}=${i}`).join("&");
    for (const path of [
      `/threads/alpha/zoom?id=0&n=1&${many}`,
      `/threads/alpha/prompt?agent=${"%41".repeat(5_000)}`,
      `/threads/${"a".repeat(9_000)}/prompt`,
    ]) {
      const r = await get(path);
      expectClientError(path, r);
      expect([414, 431], path.slice(0, 60)).toContain(r.status);
    }
  });

  it("random query strings never give a 5xx (property, 300 runs)", async () => {
    const value = fc.oneof(
      fc.integer({ min: -1_000, max: 1_000_000 }).map(String),
      fc.string({ maxLength: 30 }),
      fc.constantFrom("", "NaN", "1e9", "-0", "0x1", "2.5", "%", "%ZZ", "&", "="),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("alpha", "beta", "nobody", "a.b", "%2A"),
        fc.constantFrom("zoom", "prompt", "outline"),
        fc.dictionary(
          fc.constantFrom("id", "n", "offset", "limit", "from", "format", "agent", "thread"),
          value,
        ),
        async (thread, op, args) => {
          const query = Object.entries(args)
            .map(([k, v]) => `${k}=${v.replace(/#/g, "%23")}`)
            .join("&");
          const r = await get(`/threads/${thread}/${op}?${query}`);
          expect(r.status, `${thread}/${op}?${query}: ${r.text.slice(0, 200)}`).toBeLessThan(500);
          if (r.status >= 400) expectClientError(`${thread}/${op}?${query}`, r);
        },
      ),
      { numRuns: 300 },
    );
    expect(failures, "unexpected failures the service logged").toEqual([]);
  });
});

describe("a request reaches only the thread it names", () => {
  it("prompt, outline and every zoom of alpha hold nothing of beta; a thread argument cannot redirect", async () => {
    for (const path of [
      "/threads/alpha/prompt",
      "/threads/alpha/prompt?thread=beta",
      "/threads/alpha/outline?thread=beta",
      ...Array.from({ length: 60 }, (_, i) => `/threads/alpha/zoom?id=${i}&n=1&thread=beta`),
    ]) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.text, path).toContain("alpha");
      expect(r.text, path).not.toContain("beta-secret");
    }
  });

  it("over NATS, a body naming a wildcard or another subject's thread is refused", async () => {
    for (const thread of ["*", ">", "alpha.>", "", "beta alpha"]) {
      const reply = await nc.request(
        `${names.apiPrefix}.zoom`,
        JSON.stringify({ thread, id: 0, n: 1 }),
        {
          timeout: 2_000,
        },
      );
      const body = reply.json<{ error?: { code: string } }>();
      expect(body.error?.code, thread).toBe("BAD_THREAD_ID");
    }
  });
});

describe("an API open without a token (DNS rebinding)", () => {
  /** GET `path` with the Host header given (fetch sends the URL's own). */
  function getAs(host: string, path: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = request(`${base}${path}`, { headers: { host } }, (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.end();
    });
  }

  it("answers a request naming a loopback host, and refuses one naming any other", async () => {
    const port = new URL(base).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, "[::1]"]) {
      expect((await getAs(host, "/threads/alpha/outline")).status, host).toBe(200);
    }
    for (const host of [`rebound.example:${port}`, "10.1.2.3"]) {
      const r = await getAs(host, "/threads/alpha/outline");
      expect(r.status, host).toBe(403);
      expect(r.text).toContain("FORBIDDEN_HOST");
      expect(r.text).not.toContain("alpha-secret");
    }
  });
});
