import { createHash } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

// An OpenAI-compatible chat completions server for the fault tests, switchable at run time:
// answering after a delay (a slow model), refusing with 503 (an outage), or never answering
// (a hung upstream). The summary is a short digest of the request, so texts differ per node (a
// group call gets one named line per node);
// the clean run reads them back from HISTORY, so their content does not matter.

export type Mode =
  { kind: "ok"; minMs: number; maxMs: number } | { kind: "503" } | { kind: "hang" };

export interface SlowOpenAI {
  baseURL: string;
  /** Requests received, by the mode that answered them. */
  counts: { ok: number; "503": number; hang: number };
  setMode(mode: Mode): void;
  close(): Promise<void>;
}

/** A group call (HISTORY_GROUP) names its nodes: `… in this order: 0+1, 1+1, 2+2.` */
function groupNames(body: string): string[] | undefined {
  const messages = (JSON.parse(body || "{}") as { messages?: { content?: string }[] }).messages;
  const task = messages?.at(-1)?.content ?? "";
  const names = /in this order: ([\d+, ]+)\./.exec(task)?.[1];
  return names?.split(", ");
}

function answer(res: ServerResponse, model: string, body: string): void {
  const digest = createHash("sha256").update(body).digest("hex").slice(0, 12);
  const names = groupNames(body);
  const content = names
    ? names.map((name) => `${name}|Ana: summary ${digest} of ${name}.`).join("\n")
    : `Ana: summary ${digest} of the plan.`;
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      id: `chatcmpl-${digest}`,
      object: "chat.completion",
      created: 1_764_489_600,
      model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content },
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
    }),
  );
}

export async function startSlowOpenAI(initial: Mode): Promise<SlowOpenAI> {
  let mode = initial;
  const counts = { ok: 0, "503": 0, hang: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const current = mode;
      counts[current.kind] += 1;
      if (current.kind === "hang") return; // the client's timeout must fire
      if (current.kind === "503") {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "overloaded (test outage)", type: "test" } }));
        return;
      }
      const model = (JSON.parse(body || "{}") as { model?: string }).model ?? "fake";
      const delay = current.minMs + Math.random() * (current.maxMs - current.minMs);
      setTimeout(() => answer(res, model, body), delay);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    counts,
    setMode: (next) => {
      mode = next;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Worker environment for the OpenAI-compatible summarizer against `fake`. */
export function openAIEnv(fake: SlowOpenAI, timeoutMs = 5_000): Record<string, string> {
  return {
    HISTORY_SUMMARIZER: "openai/fake-model",
    OPENAI_BASE_URL: fake.baseURL,
    OPENAI_API_KEY: "test-key-not-secret",
    OPENAI_TIMEOUT_MS: String(timeoutMs),
  };
}
