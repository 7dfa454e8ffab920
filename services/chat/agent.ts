import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { OpenAIMessage } from "../../shared/prompt.ts";
import type { OutlineClient, SearchRequest, ZoomRequest } from "../client/client.ts";

/** Answers a thread given the prompt-builder's prompt for the agent. */
export interface Agent {
  readonly name: string;
  answer(thread: string, prompt: OpenAIMessage[]): Promise<string>;
  /** Model calls and zoom calls made so far. */
  calls(): { model: number; zoom: number };
}

/** No model configured: the agent repeats the last message as the prompt shows it. */
export function echoAgent(): Agent {
  return {
    name: "echo",
    answer: (_thread, prompt) => {
      const last = prompt.at(-1);
      return Promise.resolve(`You said: ${last?.content ?? "(nothing)"}`);
    },
    calls: () => ({ model: 0, zoom: 0 }),
  };
}

const SYSTEM = [
  "You are the agent in a long chat thread. The earliest part of the conversation may be",
  "summarized in an outline; call zoom to read a summarized part in more detail before answering",
  "about it. Answer briefly.",
].join(" ");

// Bounds a model that keeps zooming: it then answers with what it has read.
const MAX_ROUNDS = 8;

/**
 * A real model at OPENAI_BASE_URL (default api.openai.com) given the prompt and the tools the
 * running prompt-builder offers (zoom; search when its HISTORY_SEARCH is on); its zoom calls are
 * answered by that prompt-builder, its search calls by the search service.
 */
export function openAIAgent(options: {
  apiKey: string;
  baseURL?: string | undefined;
  model: string;
  /** The running prompt-builder; its search calls go to the search service behind it. */
  operations: Pick<OutlineClient, "zoom" | "tools" | "search">;
}): Agent {
  const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL });
  let model = 0;
  let zoom = 0;
  return {
    name: `openai/${options.model}`,
    calls: () => ({ model, zoom }),
    async answer(thread, prompt) {
      // Asked each turn: the prompt-builder's settings, not ours, decide what an agent is offered.
      const tools = await options.operations.tools({ thread });
      const search = tools.some((t) => t.function.name === "search");
      const messages: ChatCompletionMessageParam[] = [
        { role: "system", content: SYSTEM },
        ...prompt.map((m) => ({ role: m.role, content: m.content })),
      ];
      for (let round = 0; round < MAX_ROUNDS; round++) {
        model += 1;
        const reply = await client.chat.completions.create({
          model: options.model,
          messages,
          tools,
          ...(round === MAX_ROUNDS - 1 ? { tool_choice: "none" as const } : {}),
        });
        const choice = reply.choices[0]?.message;
        if (!choice) throw new Error(`model ${options.model} returned no choice; retry`);
        const calls = choice.tool_calls ?? [];
        if (calls.length === 0) return choice.content ?? "";
        messages.push(choice);
        for (const call of calls) {
          if (call.type !== "function") continue;
          if (call.function.name !== "search") zoom += 1;
          let result: unknown;
          try {
            // The model's arguments go as they are: the API checks them and names a rule broken.
            const args = JSON.parse(call.function.arguments) as object;
            result =
              call.function.name === "search" && search
                ? await options.operations.search({ ...(args as SearchRequest), thread })
                : await options.operations.zoom({ ...(args as ZoomRequest), thread });
          } catch (err) {
            // The model reads the rule it broke and can call again correctly.
            result = { error: (err as Error).message };
          }
          messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(result) });
        }
      }
      return "";
    },
  };
}
