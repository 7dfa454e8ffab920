import type { OpenAIMessage } from "../../shared/prompt.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { PromptReply, ZoomReply } from "../prompt-builder/operations.ts";
import type { ToolDefinition } from "../prompt-builder/tools.ts";

const HEAD = 160;
const head = (text: string): string => {
  const flat = text.replace(/\s+/g, " ");
  return flat.length > HEAD ? `${flat.slice(0, HEAD)}…` : flat;
};

/**
 * `/prompt`: each message as the model sees it, its first 160 characters, and a mark where the
 * provider's cache ends: after the outline message, which only changes at a cut; then the tools
 * the model is offered with it.
 */
export function formatPrompt(prompt: PromptReply, tools: readonly ToolDefinition[]): string[] {
  const messages = prompt.messages as OpenAIMessage[];
  const cut = prompt.stats.lines > 0;
  const out = [
    `prompt: ${messages.length} messages, outline ${prompt.stats.lines} lines / ${prompt.stats.outlineBytes} bytes, tail ~${prompt.stats.tailTokens} tokens`,
  ];
  for (const [i, m] of messages.entries()) {
    out.push(`  [${i}] ${m.role}: ${head(m.content)}`);
    if (cut && i === 0) out.push("  ──── cache ends here (end of the outline message) ────");
  }
  if (!cut) out.push("  (never cut: every message whole, no outline yet)");
  out.push(`tools: ${tools.map((t) => t.function.name).join(", ")}`);
  return out;
}

export function formatOutline(snapshot: OutlineSnapshot): string[] {
  const out = [
    `outline: ${snapshot.lines.length} lines, ${snapshot.bytes} bytes, boundary ${snapshot.boundary} of ${snapshot.count} messages`,
  ];
  for (const line of snapshot.lines) {
    out.push(
      `  ${`${line.id}+${line.n}`.padEnd(9)} L${line.level} ${String(line.bytes).padStart(4)}B  ${head(line.text)}`,
    );
  }
  return out;
}

export function formatZoom(reply: ZoomReply): string[] {
  if ("lines" in reply) return reply.lines.map((l) => `  ${l.id}+${l.n}|${l.text}`);
  const m = reply.message;
  const out = [
    `  message ${m.position} (${m.id}) ${m.from}${m.to ? ` → ${m.to}` : ""} at ${m.at}:`,
    `  ${m.text}`,
  ];
  if (reply.note) out.push(`  (${reply.note})`);
  return out;
}

export interface ChatStats {
  tailTokens: number;
  outlineBytes: number;
  /** Cuts seen while this chat ran (the boundary moved). */
  cuts: number;
  /** Merges that made the current outline: each merge turns two lines into one. */
  merges: number;
  modelCalls: number;
  zoomCalls: number;
}

export function formatStats(s: ChatStats): string {
  return `stats: tail ~${s.tailTokens} tokens, outline ${s.outlineBytes} bytes, cuts ${s.cuts} (seen by this chat), merges ${s.merges}, model calls ${s.modelCalls}, zoom calls ${s.zoomCalls}`;
}
