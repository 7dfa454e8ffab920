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
      `zoom(id, 1) returns message id whole, with its author and time; a message over ${ZOOM_PAGE} characters comes in pages: call again with the offset the note gives.`,
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
            "With n=1 only: the character to start from, for the next page of a long message.",
        },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: ZOOM_PAGE,
          description: `With n=1 only: at most this many characters (default and maximum ${ZOOM_PAGE}).`,
        },
      },
      required: ["id", "n"],
      additionalProperties: false,
    },
  },
};
