import { MAX_QUERY_CHARS } from "../../shared/search.ts";
import { ZOOM_PAGE } from "../../shared/zoom.ts";

/** An OpenAI function tool, as passed in a chat completion's `tools`. */
export interface ToolDefinition {
  type: "function";
  function: {
    name: string;
    description: string;
    parameters: Record<string, unknown>;
  };
}

/**
 * SPEC §6 as a tool an agent can call. It is the same for every thread and never changes: a
 * provider caches the tools with the prompt prefix, so nothing thread-specific goes in here.
 */
export const ZOOM_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "zoom",
    description: [
      "Open a line of the summarized earlier conversation (the outline between <chat> and </chat>).",
      "Each outline line is id+n|text and covers the n messages from message id on.",
      "zoom(id, n) with n > 1 returns the two lines that line was made from: id+n/2 and (id+n/2)+n/2 (only the first when the second starts past the outline).",
      `zoom(id, 1) returns message id whole, with its author and time; a message over ${ZOOM_PAGE} UTF-16 code units comes in pages: call again with the offset the note gives.`,
      "Rules: n is a power of two (1, 2, 4, 8, …) and id a multiple of n; zoom(id, n) with n > 1 needs id inside the outline.",
    ].join(" "),
    parameters: {
      type: "object",
      properties: {
        id: {
          type: "integer",
          minimum: 0,
          description: "The first message the line covers: the number before '+' in id+n.",
        },
        n: {
          type: "integer",
          minimum: 1,
          description:
            "How many messages the line covers: the number after '+'. 1 reads one message whole.",
        },
        offset: {
          type: "integer",
          minimum: 0,
          description:
            "With n=1 only: where the page starts, in UTF-16 code units (the note gives the next page's).",
        },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: ZOOM_PAGE,
          description: `With n=1 only: the page's length limit, in UTF-16 code units (default and maximum ${ZOOM_PAGE}).`,
        },
      },
      required: ["id", "n"],
      additionalProperties: false,
    },
  },
};

/**
 * SPEC §8's search as a tool (HISTORY_SEARCH=on). Its parameters are the endpoint's query
 * arguments, so a platform passes a call's arguments on as they are, as it does zoom's.
 */
export const SEARCH_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "search",
    description: [
      "Find messages of this conversation by their words: plain text matching over the original messages (never the summaries), ignoring case; q may be part of a word (e.g. 'locker cod').",
      "Answers { hits: [{ id, message, in, at, from, snippet }], before }, up to 20 hits, newest first.",
      "id is the message's number: zoom(id, 1) reads it whole. in is the outline line that holds it, or null when the message is shown whole after the outline. snippet shows the match «marked».",
      "For older hits call again with before set to the answer's before (null: there are none).",
    ].join(" "),
    parameters: {
      type: "object",
      properties: {
        q: {
          type: "string",
          minLength: 1,
          maxLength: MAX_QUERY_CHARS,
          description: "The text to find: a name, a number, a few words.",
        },
        before: {
          type: "integer",
          minimum: 0,
          description:
            "Only messages before this id: the previous answer's before, for the next page.",
        },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: 100,
          description: "Hits per answer (default 20).",
        },
      },
      required: ["q"],
      additionalProperties: false,
    },
  },
};

/** The tools agents are offered (GET /threads/{thread}/tools), in a chat completion's shape. */
export function toolsFor(search: boolean): ToolDefinition[] {
  return search ? [ZOOM_TOOL, SEARCH_TOOL] : [ZOOM_TOOL];
}
