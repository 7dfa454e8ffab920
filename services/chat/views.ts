import type { OpenAIMessage } from "../../shared/prompt.ts";
import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import type { PromptReply, ZoomReply } from "../prompt-builder/operations.ts";
import type { ToolDefinition } from "../api/tools.ts";

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

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * `/outline`: the snapshot's lines. The worker publishes it after the messages it folds in, so it
 * trails the newest: `newer` (the prompt's count of messages stored after it, when known) says
 * by how much, as prompts include those messages whole; "unwritten" when the worker has written
 * none yet and the prompt-builder counted the stored messages instead.
 */
export function formatOutline(snapshot: OutlineSnapshot, newer?: number | "unwritten"): string[] {
  const { jobs, cuts } = snapshot.pending;
  const at = `snapshot at message ${snapshot.count}`;
  const lag =
    newer === "unwritten"
      ? "no snapshot yet (the worker has not written one): the stored messages, all whole in prompts"
      : newer === undefined
        ? `${at}; messages newer than it, if any, are not in it yet`
        : newer === 0
          ? `${at}, the newest`
          : `${at}; ${newer} newer not in it yet (the snapshot trails the newest messages; prompts include them whole)`;
  const pending =
    jobs > 0 || cuts > 0
      ? `; pending: ${plural(jobs, "summary", "summaries")}, ${plural(cuts, "cut")}`
      : "";
  const out = [
    `outline: ${snapshot.lines.length} lines, ${snapshot.bytes} bytes, boundary ${snapshot.boundary} of ${snapshot.count} messages: ${lag}${pending}`,
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
  /** Cuts seen since this chat started: times the boundary had moved when it looked. */
  cuts: number;
  /** Merges since this chat started (each turns two lines into one). */
  merges: number;
  /** The thread's whole life: messages cut (the boundary), and merges (boundary − lines). */
  thread: { cut: number; merges: number };
  modelCalls: number;
  zoomCalls: number;
}

/** `/stats`: what this chat saw, then the thread's lifetime counts, each labelled. */
export function formatStats(s: ChatStats): string[] {
  return [
    `stats: tail ~${s.tailTokens} tokens, outline ${s.outlineBytes} bytes, model calls ${s.modelCalls}, zoom calls ${s.zoomCalls}`,
    `  since this chat started: ${plural(s.cuts, "cut")} seen, ${plural(s.merges, "merge")}`,
    `  the thread's whole life: ${plural(s.thread.cut, "message")} cut, ${plural(s.thread.merges, "merge")}`,
  ];
}
