import type { AnthropicMessage, OpenAIMessage } from "../../shared/prompt.ts";
import type { PromptReply } from "../prompt-builder/operations.ts";
import { parse, str } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline prompt <thread> [--agent NAME] [--from ISO-TIME] [--format openai|anthropic] [--json]

Prints the prompt an agent would be sent (README.md, "The contract": a prompt's messages): the
outline message, then the whole messages, each with its tool steps ([N steps: …], cut short past
200 characters) and its state ([state: …]) when it carries them. It asks the running
prompt-builder (npm start), so the prompt is built with its settings.

  --agent NAME    whose messages are 'assistant' (others are 'user', prefixed with the author)
  --from TIME     leave out lines and messages older than this ISO-8601 time
  --format F      openai (default) or anthropic (content blocks with cache marks)
  --json          the API's JSON instead of text`;

function contentText(m: OpenAIMessage | AnthropicMessage): string {
  if (typeof m.content === "string") return m.content;
  return m.content.map((b) => (b.cache_control ? `${b.text}⟨cache mark⟩` : b.text)).join("");
}

/** Past this many characters of JSON, the steps are cut short: --json shows them whole. */
const STEPS_SHOWN = 200;

/** A message's tool steps in one line: their count and their JSON, cut short when long. */
function stepsLine(steps: readonly unknown[]): string {
  const json = JSON.stringify(steps);
  let shown = json;
  if (json.length > STEPS_SHOWN) {
    // Never half of a surrogate pair.
    const end = /[\uD800-\uDBFF]/.test(json[STEPS_SHOWN - 1] ?? "") ? STEPS_SHOWN - 1 : STEPS_SHOWN;
    shown = `${json.slice(0, end)}… (${json.length} characters; --json shows them whole)`;
  }
  return `[${steps.length} step${steps.length === 1 ? "" : "s"}: ${shown}]`;
}

/** The text `outline prompt` prints for a reply: each message, its steps and state, then stats. */
export function promptText(reply: PromptReply): string[] {
  const lines: string[] = [];
  for (const m of reply.messages) {
    lines.push(`── ${m.role} ──`, contentText(m));
    if (m.steps !== undefined && m.steps.length > 0) lines.push(stepsLine(m.steps));
    if (m.state !== undefined) lines.push(`[state: ${JSON.stringify(m.state)}]`);
  }
  const s = reply.stats;
  const n = reply.messages.length;
  lines.push(
    `── ${n} message${n === 1 ? "" : "s"}; outline ${s.lines} lines, ${s.outlineBytes} bytes; tail ≈${s.tailTokens} tokens; ${s.newerThanSnapshot} newer than the snapshot ──`,
  );
  return lines;
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
    return withSession(async ({ client }) => {
      const reply: PromptReply = await client.prompt({
        thread: args.positionals[0] ?? "",
        agent: str(args.values.agent),
        from: str(args.values.from),
        // Checked by the prompt-builder, which names the formats it takes.
        format: str(args.values.format) as "openai" | undefined,
      });
      if (args.values.json === true) {
        out.line(JSON.stringify(reply, null, 2));
        return 0;
      }
      for (const line of promptText(reply)) out.line(line);
      return 0;
    });
  },
};
