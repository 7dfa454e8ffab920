// A local OpenAI-compatible chat completions server for the summarizer's integration tests:
// each request takes the next scripted reply, and every request is recorded as received.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: {
    model: string;
    messages: { role: string; content: string }[];
    [key: string]: unknown;
  };
}

export type Reply =
  | { kind: "text"; text: string; usage?: { input: number; cached: number; output: number } }
  | { kind: "status"; status: number; headers?: Record<string, string>; message?: string }
  | { kind: "hang" };

export const text = (
  t: string,
  usage?: { input: number; cached: number; output: number },
): Reply => (usage ? { kind: "text", text: t, usage } : { kind: "text", text: t });
export const status = (s: number, headers?: Record<string, string>): Reply =>
  headers ? { kind: "status", status: s, headers } : { kind: "status", status: s };
export const hang: Reply = { kind: "hang" };

export interface FakeOpenAI {
  baseURL: string;
  requests: Recorded[];
  /** Replies for the next requests, in order; when empty, a fixed short line. */
  script(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: Recorded[] = [];
  const queue: Reply[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Recorded["body"];
      requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const reply = queue.shift() ?? text("Ana: default line.");
      if (reply.kind === "hang") return; // never answers: the client's timeout must fire
      if (reply.kind === "status") {
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
        res.end(
          JSON.stringify({
            error: {
              message: reply.message ?? `scripted ${reply.status}`,
              type: "test",
              code: null,
            },
          }),
        );
        return;
      }
      const usage = reply.usage ?? { input: 100, cached: 0, output: 10 };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${requests.length}`,
          object: "chat.completion",
          created: 1_764_489_600,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: reply.text },
              finish_reason: "stop",
            },
          ],
          usage: {
            prompt_tokens: usage.input,
            completion_tokens: usage.output,
            total_tokens: usage.input + usage.output,
            prompt_tokens_details: { cached_tokens: usage.cached },
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...replies) => {
      queue.length = 0;
      queue.push(...replies);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
