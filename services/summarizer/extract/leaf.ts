// A message in one line: who said it, its opening, then the sentences and exact tokens that
// carry the most. A leaf line stays close to its message; merges choose from the leaf's digest.
import { cutToBytes } from "../../../shared/bytes.ts";
import type { Message } from "../../../shared/events.ts";
import { describeStep, renderWho } from "../source.ts";
import { compose } from "./compose.ts";
import { findEntities, type Entity } from "./entities.ts";
import { textIdeas, type Idea } from "./segment.ts";

// A line holds a few hundred bytes: reading past this much of a message only costs time. The
// end is kept too, because that is where a long message says how it came out.
const READ_HEAD = 48_000;
const READ_TAIL = 16_000;

export function readable(text: string): string {
  // (+ 2: what this returns is read as is again, so a worker thread reads what was sent.)
  if (text.length <= READ_HEAD + READ_TAIL + 2) return text;
  let tailStart = text.length - READ_TAIL;
  const code = text.charCodeAt(tailStart);
  if (code >= 0xdc00 && code <= 0xdfff) tailStart++; // not half a surrogate pair
  return `${cutToBytes(text, READ_HEAD)}\n\n${text.slice(tailStart)}`;
}

// "Hi Bo, " says nothing the head `Ana → Bo:` does not.
const GREETING =
  /^(?:hi|hello|hey|dear|good (?:morning|afternoon|evening))\b[^,.!:?]{0,40}[,!:.]\s+/i;
export function dropGreeting(sentence: string): string {
  return sentence.replace(GREETING, "");
}

function stepsNote(steps: readonly unknown[]): { full: string; short: string } {
  const count = `${steps.length} step${steps.length === 1 ? "" : "s"}`;
  const names = steps.map((step) => cutToBytes(describeStep(step), 60));
  return { full: `${count}: ${names.join(", ")}`, short: count };
}

/** A message read once: its ideas (the opening without a greeting), exact tokens, steps. */
export interface ReadMessage {
  ideas: Idea[];
  entities: Entity[];
  note?: { full: string; short: string };
}

export function readMessage(message: Pick<Message, "text" | "steps">): ReadMessage {
  const text = readable(message.text);
  const steps = message.steps ?? [];
  let ideas: Idea[] = textIdeas(text);
  // A message that is only tool calls: its steps are what it said.
  const stepsAreText = ideas.length === 0 && steps.length > 0;
  if (stepsAreText) {
    ideas = steps.map((step) => ({ head: "", turn: 0, sentences: [describeStep(step)] }));
  }
  if (ideas.length === 0) ideas = [{ head: "", turn: 0, sentences: [] }];
  const opening = (ideas[0]?.sentences ?? []).map((s, i) => (i === 0 ? dropGreeting(s) : s));
  ideas[0] = { head: "", turn: 0, sentences: opening.filter((s) => s !== "") };
  const entities = findEntities(
    stepsAreText ? ideas.map((i) => i.sentences.join(" ")).join("\n") : text,
  );
  return {
    ideas,
    entities,
    ...(steps.length > 0 && !stepsAreText ? { note: stepsNote(steps) } : {}),
  };
}

/** A message in one line of at most `line` bytes: who said it, then what matters most. */
export function leafLine(
  message: Pick<Message, "from" | "to">,
  read: ReadMessage,
  line: number,
): string {
  const head = `${cutToBytes(renderWho(message), Math.floor(line / 3))}: `;
  return compose({
    ideas: read.ideas.map((idea) => ({ ...idea, head })),
    entities: read.entities,
    pinned: new Set([0]),
    limit: line,
    ...(read.note ? { note: read.note } : {}),
  });
}

export function extractLeaf(
  message: Pick<Message, "from" | "to" | "text" | "steps">,
  line: number,
): string {
  return leafLine(message, readMessage(message), line);
}
