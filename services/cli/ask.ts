import { RequestError, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { ApiError } from "../prompt-builder/api-error.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { Operations, PromptReply, ZoomReply } from "../prompt-builder/operations.ts";
import type { RawRequest } from "../prompt-builder/requests.ts";
import type { ToolDefinition } from "../prompt-builder/tools.ts";

/** What the prompt-builder answers over NATS (nats-api.ts, and `cluster` in cluster/view.ts). */
export type ApiOp = "prompt" | "zoom" | "outline" | "tools" | "cluster";

/**
 * Asks the running prompt-builder (`<apiPrefix>.<op>`, services/prompt-builder/nats-api.ts) and
 * returns its reply as JSON bytes. The answer is the one an agent gets: built with the service's
 * settings (HISTORY_SEARCH, the tail's cap), not this shell's. A reply with an `Outline-Status`
 * other than 200 is thrown as the ApiError it carries.
 */
export async function askPromptBuilder(
  nc: NatsConnection,
  apiPrefix: string,
  op: ApiOp,
  raw: RawRequest,
  timeoutMs = 10_000,
): Promise<Uint8Array> {
  const subject = `${apiPrefix}.${op}`;
  let reply;
  try {
    reply = await nc.request(subject, JSON.stringify(raw), { timeout: timeoutMs });
  } catch (err) {
    if (
      (err instanceof RequestError && err.isNoResponders()) ||
      (err as Error).name === "NoRespondersError"
    ) {
      throw new ApiError(
        503,
        "PROMPT_BUILDER_UNAVAILABLE",
        `no prompt-builder answers on ${subject}: start one ('npm start', or 'node dist/prompt-builder.js') with the same NATS_URL and OUTLINE_API_PREFIX`,
      );
    }
    if (err instanceof TimeoutError || (err as Error).name === "TimeoutError") {
      throw new ApiError(
        504,
        "PROMPT_BUILDER_TIMEOUT",
        `the prompt-builder did not answer on ${subject} within ${timeoutMs / 1000} s; retry, or see its log`,
      );
    }
    throw err;
  }
  const status = Number(reply.headers?.get("Outline-Status") || 200);
  if (status !== 200) {
    let body: { error?: { code?: string; message?: string } } = {};
    try {
      body = reply.json();
    } catch {
      // Not our error body: say the status alone.
    }
    throw new ApiError(
      status,
      body.error?.code ?? "PROMPT_BUILDER_FAILED",
      body.error?.message ?? `the prompt-builder answered ${status} on ${subject}`,
    );
  }
  return reply.data;
}

/** The operations of the running prompt-builder, asked over NATS (chat and demo use these). */
export type PromptBuilderClient = Pick<Operations, "prompt" | "zoom" | "outline" | "tools">;

/**
 * `askPromptBuilder` for each operation, its answer parsed: what an agent of the running
 * prompt-builder gets (its HISTORY_SEARCH, its tail's cap), whatever the caller's settings say.
 */
export function promptBuilderClient(
  nc: NatsConnection,
  apiPrefix: string,
  timeoutMs?: number,
): PromptBuilderClient {
  const decoder = new TextDecoder();
  const ask = async <T>(op: "prompt" | "zoom" | "outline" | "tools", raw: RawRequest) =>
    JSON.parse(decoder.decode(await askPromptBuilder(nc, apiPrefix, op, raw, timeoutMs))) as T;
  return {
    prompt: (raw) => ask<PromptReply>("prompt", raw),
    zoom: (raw) => ask<ZoomReply>("zoom", raw),
    outline: (raw) => ask<OutlineSnapshot>("outline", raw),
    tools: (raw) => ask<ToolDefinition[]>("tools", raw),
  };
}

/**
 * Fails with PROMPT_BUILDER_UNAVAILABLE (or its timeout) unless a prompt-builder answers: asked
 * about `thread`, any answer proves one runs, THREAD_NOT_FOUND for a thread not started yet too.
 */
export async function requirePromptBuilder(
  client: PromptBuilderClient,
  thread: string,
): Promise<void> {
  try {
    await client.tools({ thread });
  } catch (err) {
    const none = ["PROMPT_BUILDER_UNAVAILABLE", "PROMPT_BUILDER_TIMEOUT"];
    if (err instanceof ApiError && none.includes(err.code)) throw err;
  }
}
