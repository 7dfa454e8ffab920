import { foldNewlines, utf8Bytes } from "./bytes.ts";
import type { Message } from "./events.ts";
import { nodeId, nodeSize, type NodeRef } from "./names.ts";

/** `id+n|text` with newlines folded: one line of the outline (without its newline). */
export function renderLine(node: NodeRef, text: string): string {
  return `${nodeId(node)}+${nodeSize(node)}|${foldNewlines(text)}`;
}

/** Bytes a line adds to the outline: its rendering plus the newline. */
export function lineBytes(node: NodeRef, text: string): number {
  // `id+n|` is ASCII; the text is measured as it is, folded only when it has a line break.
  const head = String(nodeId(node)).length + String(nodeSize(node)).length + 2;
  return head + utf8Bytes(foldNewlines(text)) + 1;
}

/** A message as its leaf's source: `from → to: text`, newlines as spaces. */
export function renderSource(message: Pick<Message, "from" | "to" | "text">): string {
  const who = message.to ? `${message.from} → ${message.to}` : message.from;
  return foldNewlines(`${who}: ${message.text}`);
}

/**
 * A leaf that fits in `line` bytes is its own line, verbatim, with no model call. A message
 * carrying tool steps is never free: its steps are part of what the line must say.
 */
export function freeLeafText(message: Message, line: number): string | undefined {
  if (message.steps !== undefined && message.steps.length > 0) return undefined;
  // Without a line break nothing folds, and a UTF-8 string has at least as many bytes as UTF-16
  // units: a text longer than the line cannot fit (no need to render it).
  if (message.text.length > line && message.text.indexOf("\n") < 0) {
    if (message.text.indexOf("\r") < 0) return undefined;
  }
  const source = renderSource(message);
  return utf8Bytes(source) <= line ? source : undefined;
}

const JOIN = " / ";

/** Two children's texts joined: a free parent's text. */
export function joinedText(left: string, right: string): string {
  return `${left}${JOIN}${right}`;
}

/** Whether `text` is `joinedText(left, right)`, compared in place (nothing joined). */
export function isJoinedText(text: string, left: string, right: string): boolean {
  return (
    text.length === left.length + JOIN.length + right.length &&
    text.startsWith(left) &&
    text.startsWith(JOIN, left.length) &&
    text.endsWith(right)
  );
}

/** A parent whose two children joined by " / " fit in `line` bytes is built the same way. */
export function freeParentText(left: string, right: string, line: number): string | undefined {
  // A UTF-8 string has at least as many bytes as UTF-16 units: most pairs are rejected unread,
  // and the others are measured without joining them first.
  if (left.length + right.length + JOIN.length > line) return undefined;
  return utf8Bytes(left) + utf8Bytes(right) + JOIN.length <= line
    ? joinedText(left, right)
    : undefined;
}
