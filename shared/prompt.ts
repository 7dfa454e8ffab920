import type { AnthropicMessage, AnthropicTextBlock, OpenAIMessage, PromptStats } from "./api.ts";
import { foldNewlines, utf8Bytes } from "./bytes.ts";
import type { Message } from "./events.ts";
import { estimateMessageTokens } from "./tokens.ts";

/** Tells the model how to read the outline (SPEC §5). Never changes: it is part of the cached prefix. */
export const OUTLINE_HEADER = [
  "Earlier in this conversation, summarized, oldest first.",
  "Each line is id+n|text: the n messages from message id on, summarized.",
  "zoom(id, n) opens a line into the two lines it was made from; zoom(id, 1) gives message id whole.",
].join("\n");

/** The header's line about search (HISTORY_SEARCH=on): switching it changes the prefix once. */
export const SEARCH_HEADER_LINE =
  "search(q) finds the original messages containing the text q (any case), newest first, with the line holding each; zoom(id, 1) reads a hit.";

/** The outline's header, naming the search tool when agents are offered it. */
export const outlineHeader = (search: boolean): string =>
  search ? `${OUTLINE_HEADER}\n${SEARCH_HEADER_LINE}` : OUTLINE_HEADER;

/** A line as the prompt shows it. */
export interface PromptLine {
  id: number;
  n: number;
  text: string;
  until: string;
}

export interface PromptInput {
  /** The agent the prompt is for: its own messages are `assistant`. */
  agent: string;
  /** Window by age (ISO-8601): lines and messages older than it are left out. */
  from?: string | undefined;
  /** The outline, oldest first; empty for a thread never cut. */
  lines: readonly PromptLine[];
  /** `at` of the newest message when the last cut happened; null if never cut. */
  cutAt: string | null;
  /** The messages still whole, oldest first. */
  tail: readonly Message[];
  /**
   * Hard cap on the tail's estimated tokens. While summaries lag (an outage), cuts wait and the
   * tail grows past tail[1]; past this cap the oldest whole messages are left out and the prompt
   * says they are pending. Absent: no cap.
   */
  tailCap?: number | undefined;
  /** Position of the first tail message (the boundary), to name pending messages. */
  firstPosition?: number | undefined;
  /** HISTORY_SEARCH: the header names the search tool. */
  search?: boolean | undefined;
}

export type { AnthropicMessage, AnthropicTextBlock, OpenAIMessage, PromptStats };

export interface Prompt<M> {
  messages: M[];
  stats: PromptStats;
}

/** Lines per Anthropic cache block, and where marks go (SPEC §5). */
export const LINES_PER_BLOCK = 4;
export const MARK_OFFSETS = [0, 20, 40] as const;

const time = (iso: string): number => Date.parse(iso);

export const renderPromptLine = (line: PromptLine): string =>
  `${line.id}+${line.n}|${foldNewlines(line.text)}`;

/** Lines whose newest message is older than the window are left out, as their messages are. */
function shownLines(input: Pick<PromptInput, "lines" | "from">): readonly PromptLine[] {
  if (!input.from) return input.lines;
  const from = time(input.from);
  return input.lines.filter((line) => time(line.until) >= from);
}

function shownTail(input: PromptInput): readonly Message[] {
  if (!input.from) return input.tail;
  const from = time(input.from);
  return input.tail.filter((m) => time(m.at) >= from);
}

/**
 * How many of the oldest tail messages the hard cap leaves out (never the newest), and the
 * estimated tokens of those that stay. Each message is estimated once.
 */
function overCap(
  tail: readonly Message[],
  cap: number | undefined,
  cost: (message: Message) => number,
): { drop: number; tokens: number } {
  const costs = tail.map((m) => cost(m));
  let tokens = 0;
  for (const c of costs) tokens += c;
  let drop = 0;
  if (cap !== undefined)
    while (tokens > cap && drop < tail.length - 1) tokens -= costs[drop++] ?? 0;
  return { drop, tokens };
}

/** Says which messages are not in the prompt yet, and how to read them. */
export function pendingNote(first: number, count: number): string {
  const range =
    count === 1 ? `message ${first} is` : `messages ${first} to ${first + count - 1} are`;
  return `[${range} waiting to be summarized and not shown here; zoom(id, 1) reads one whole]`;
}

/** One message whole: the agent's own as assistant, everyone else's as user with the author. */
export function wholeMessage(message: Message, agent: string, cutAt: string | null): OpenAIMessage {
  const own = message.from === agent;
  const out: OpenAIMessage = own
    ? { role: "assistant", content: message.text }
    : { role: "user", content: `${message.from}: ${message.text}` };
  // Model state from before the last cut was thought with a different start of the conversation.
  if (own && message.state !== undefined && (cutAt === null || time(message.at) > time(cutAt))) {
    out.state = message.state;
  }
  if (message.steps !== undefined && message.steps.length > 0) out.steps = message.steps;
  return out;
}

/**
 * The outline's part of a prompt, rendered once: it changes only with a snapshot, so a caller
 * serving many turns of a thread keeps it per snapshot (and per window, format and header).
 */
export interface RenderedOutline {
  /** Shown lines, and the bytes they add (each line and its newline). */
  lines: number;
  bytes: number;
  /** The outline message (OpenAI: one text; Anthropic: cache-marked blocks); none without lines. */
  openai: OpenAIMessage | undefined;
  anthropic: AnthropicMessage | undefined;
}

/** The outline lines `input` shows (its window applied), rendered in both formats. */
export function renderOutline(
  input: Pick<PromptInput, "lines" | "from" | "search">,
): RenderedOutline {
  const lines = shownLines(input);
  const rendered = lines.map(renderPromptLine);
  let bytes = 0;
  for (const r of rendered) bytes += utf8Bytes(r) + 1;
  if (rendered.length === 0) return { lines: 0, bytes, openai: undefined, anthropic: undefined };
  const header = outlineHeader(input.search === true);
  return {
    lines: lines.length,
    bytes,
    openai: { role: "user", content: `${header}\n<chat>\n${rendered.join("\n")}\n</chat>` },
    anthropic: { role: "user", content: anthropicBlocks(header, rendered) },
  };
}

/** What a prompt shows after its outline: the note on messages the cap left out, then the tail. */
export interface PromptTail {
  note: OpenAIMessage | undefined;
  /** The messages shown whole, oldest first (as `wholeMessage` renders each). */
  whole: readonly Message[];
  tokens: number;
  pending: number;
}

/**
 * The whole messages `input` shows: its window, then its hard cap, applied. `cost`: a message's
 * estimated tokens (a caller serving many turns keeps them per message).
 */
export function promptTail(
  input: PromptInput,
  cost: (message: Message) => number = estimateMessageTokens,
): PromptTail {
  const all = shownTail(input);
  const { drop: pending, tokens } = overCap(all, input.tailCap, cost);
  const whole = pending > 0 ? all.slice(pending) : all;
  let note: OpenAIMessage | undefined;
  if (pending > 0) {
    const first = (input.firstPosition ?? 0) + (input.tail.length - all.length);
    note = { role: "user", content: pendingNote(first, pending) };
  }
  return { note, whole, tokens, pending };
}

/** A prompt's stats from its two parts. */
export const promptStats = (outline: RenderedOutline, tail: PromptTail): PromptStats => ({
  outlineBytes: outline.bytes,
  tailTokens: tail.tokens,
  lines: outline.lines,
  pending: tail.pending,
});

/** SPEC §5 in OpenAI chat format: the outline as one user message, then the tail whole. */
export function buildOpenAIPrompt(input: PromptInput): Prompt<OpenAIMessage> {
  const outline = renderOutline(input);
  return buildPrompt(input, outline.openai, outline);
}

function buildPrompt<M extends OpenAIMessage | AnthropicMessage>(
  input: PromptInput,
  outlineMessage: M | undefined,
  outline: RenderedOutline,
): Prompt<M | OpenAIMessage> {
  const tail = promptTail(input);
  const messages: (M | OpenAIMessage)[] = outlineMessage ? [outlineMessage] : [];
  if (tail.note) messages.push(tail.note);
  for (const m of tail.whole) messages.push(wholeMessage(m, input.agent, input.cutAt));
  return { messages, stats: promptStats(outline, tail) };
}

/**
 * SPEC §5 in Anthropic's format: the outline message split into blocks of 4 lines, with cache
 * marks on the last whole block and on the blocks 20 and 40 before it (a provider looks back only
 * about 20 blocks from a mark). The blocks' texts joined are the OpenAI outline message's content.
 */
export function buildAnthropicPrompt(input: PromptInput): Prompt<AnthropicMessage> {
  const outline = renderOutline(input);
  return buildPrompt(input, outline.anthropic, outline);
}

function anthropicBlocks(header: string, rendered: readonly string[]): AnthropicTextBlock[] {
  const blocks: AnthropicTextBlock[] = [{ type: "text", text: `${header}\n<chat>\n` }];
  const whole = Math.floor(rendered.length / LINES_PER_BLOCK);
  for (let b = 0; b * LINES_PER_BLOCK < rendered.length; b++) {
    const chunk = rendered.slice(b * LINES_PER_BLOCK, (b + 1) * LINES_PER_BLOCK);
    const last = (b + 1) * LINES_PER_BLOCK >= rendered.length;
    blocks.push({ type: "text", text: last ? chunk.join("\n") : `${chunk.join("\n")}\n` });
  }
  blocks.push({ type: "text", text: "\n</chat>" });
  const lastWhole = whole; // block index in `blocks` (the header is block 0)
  for (const offset of MARK_OFFSETS) {
    const at = lastWhole - offset;
    const block = blocks[at];
    if (at >= 1 && block) block.cache_control = { type: "ephemeral" };
  }
  return blocks;
}
