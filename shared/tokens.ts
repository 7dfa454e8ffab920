import { NON_ASCII } from "./bytes.ts";

/** Fixed cost of a message in a prompt: role, framing, the author's name. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * Estimated tokens of a text. Tokenizers spend about 4 ASCII characters per token, about one
 * token per CJK character, two or more per emoji, and in between for other scripts.
 */
export function estimateTextTokens(text: string): number {
  // ASCII only (most texts): 4 characters a token. The RegExp scan is several times faster
  // than the loop below.
  if (!NON_ASCII.test(text)) return Math.ceil(text.length / 4);
  let quarterTokens = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) quarterTokens += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      // Astral plane: emoji and rare CJK; both cost the most.
      quarterTokens += 8;
      i++;
    } else if (
      (c >= 0x3000 && c <= 0x9fff) ||
      (c >= 0xac00 && c <= 0xd7af) ||
      (c >= 0xf900 && c <= 0xfaff)
    ) {
      quarterTokens += 4;
    } else if (c >= 0x2600 && c <= 0x27bf) quarterTokens += 6;
    else quarterTokens += 2;
  }
  return Math.ceil(quarterTokens / 4);
}

export interface Costed {
  from: string;
  text: string;
  steps?: unknown[] | undefined;
  files?: unknown;
}

/** A message's estimated prompt cost: text, tool steps, files, and a fixed overhead. */
export function estimateMessageTokens(message: Costed): number {
  let tokens =
    MESSAGE_OVERHEAD_TOKENS + estimateTextTokens(message.from) + estimateTextTokens(message.text);
  if (message.steps !== undefined && message.steps.length > 0) {
    tokens += estimateTextTokens(JSON.stringify(message.steps));
  }
  if (message.files !== undefined) tokens += estimateTextTokens(JSON.stringify(message.files));
  return tokens;
}
