import type { NatsConnection } from "@nats-io/transport-node";
import { createClient, type OutlineClient } from "../client/client.ts";
import { ApiError } from "../api/api-error.ts";

/** What chat and demo ask the running prompt-builder for. */
export type PromptBuilderClient = Pick<OutlineClient, "prompt" | "zoom" | "outline" | "tools">;

/**
 * The running prompt-builder over NATS (`<apiPrefix>.<op>`), through the typed client: its
 * answers are the ones an agent gets, built with the service's settings (HISTORY_SEARCH, the
 * tail's cap), not this shell's. Search goes to the search service on the same prefix.
 */
export function promptBuilderClient(
  nc: NatsConnection,
  apiPrefix: string,
  timeoutMs?: number,
): OutlineClient {
  return createClient({ nats: nc, apiPrefix, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

/**
 * Fails with PROMPT_BUILDER_UNAVAILABLE (or its timeout) unless a prompt-builder answers: asked
 * about `thread`, any answer proves one runs, THREAD_NOT_FOUND for a thread not started yet too.
 */
export async function requirePromptBuilder(
  client: Pick<OutlineClient, "tools">,
  thread: string,
): Promise<void> {
  try {
    await client.tools({ thread });
  } catch (err) {
    const none = ["PROMPT_BUILDER_UNAVAILABLE", "PROMPT_BUILDER_TIMEOUT"];
    if (err instanceof ApiError && none.includes(err.code)) throw err;
  }
}
