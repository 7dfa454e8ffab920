import type { AnthropicMessage, OpenAIMessage } from "../../shared/prompt.ts";
import type { PromptReply } from "../prompt-builder/operations.ts";
import { parse, str } from "./args.ts";
import { askPromptBuilder } from "./ask.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline prompt <thread> [--agent NAME] [--from ISO-TIME] [--format openai|anthropic] [--json]

Prints the prompt an agent would be sent (README.md, "The contract": a prompt's messages): the
outline message, then the whole messages. It asks the running prompt-builder (npm start), so the
prompt is built with its settings.

  --agent NAME    whose messages are 'assistant' (others are 'user', prefixed with the author)
  --from TIME     leave out lines and messages older than this ISO-8601 time
  --format F      openai (default) or anthropic (content blocks with cache marks)
  --json          the API's JSON instead of text`;

function contentText(m: OpenAIMessage | AnthropicMessage): string {
  if (typeof m.content === "string") return m.content;
  return m.content.map((b) => (b.cache_control ? `${b.text}⟨cache mark⟩` : b.text)).join("");
}

export const prompt: Command = {
  name: "prompt",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(
      argv,
      {
        agent: { type: "string" },
        from: { type: "string" },
        format: { type: "string" },
        json: { type: "boolean" },
      },
      1,
    );
    if (args.help) return out.help(USAGE);
    return withSession(async ({ nc, config }) => {
      const body = await askPromptBuilder(nc, config.names.apiPrefix, "prompt", {
        thread: args.positionals[0],
        agent: str(args.values.agent),
        from: str(args.values.from),
        format: str(args.values.format),
      });
      const reply = JSON.parse(new TextDecoder().decode(body)) as PromptReply;
      if (args.values.json === true) {
        out.line(JSON.stringify(reply, null, 2));
        return 0;
      }
      for (const m of reply.messages) {
        out.line(`── ${m.role} ──`);
        out.line(contentText(m));
        if (m.state !== undefined) out.line(`[state: ${JSON.stringify(m.state)}]`);
      }
      const s = reply.stats;
      out.line(
        `── ${reply.messages.length} message${reply.messages.length === 1 ? "" : "s"}; outline ${s.lines} lines, ${s.outlineBytes} bytes; tail ≈${s.tailTokens} tokens; ${s.newerThanSnapshot} newer than the snapshot ──`,
      );
      return 0;
    });
  },
};
