import { cutToBytes } from "../../shared/bytes.ts";
import type { Message } from "../../shared/events.ts";
import type { ContextLine, SummaryJob, SummaryResult, Summarizer } from "../../shared/jobs.ts";
import { compose } from "./extract/compose.ts";
import { findEntities, type Entity } from "./extract/entities.ts";
import { lineIdeas, textIdeas, type Idea } from "./extract/segment.ts";
import { noUsage, type UsageTotals } from "./usage.ts";
import { describeStep, renderWho } from "./source.ts";

// A line holds a few hundred bytes: reading past this much of a message only costs time. The
// end is kept too, because that is where a long message says how it came out.
const READ_HEAD = 48_000;
const READ_TAIL = 16_000;

function readable(text: string): string {
  if (text.length <= READ_HEAD + READ_TAIL) return text;
  let tailStart = text.length - READ_TAIL;
  const code = text.charCodeAt(tailStart);
  if (code >= 0xdc00 && code <= 0xdfff) tailStart++; // not half a surrogate pair
  return `${cutToBytes(text, READ_HEAD)}\n\n${text.slice(tailStart)}`;
}

// "Hi Bo, " says nothing the head `Ana → Bo:` does not.
const GREETING =
  /^(?:hi|hello|hey|dear|good (?:morning|afternoon|evening))\b[^,.!:?]{0,40}[,!:.]\s+/i;
function dropGreeting(sentence: string): string {
  return sentence.replace(GREETING, "");
}

function stepsNote(steps: readonly unknown[]): { full: string; short: string } {
  const count = `${steps.length} step${steps.length === 1 ? "" : "s"}`;
  const names = steps.map((step) => cutToBytes(describeStep(step), 60));
  return { full: `${count}: ${names.join(", ")}`, short: count };
}

/** A message in one line of at most `line` bytes: who said it, then what matters most. */
export function extractLeaf(message: Message, line: number): string {
  const text = readable(message.text);
  const steps = message.steps ?? [];
  let ideas: Idea[] = textIdeas(text);
  // A message that is only tool calls: its steps are what it said.
  const stepsAreText = ideas.length === 0 && steps.length > 0;
  if (stepsAreText) {
    ideas = steps.map((step) => ({ head: "", turn: 0, sentences: [describeStep(step)] }));
  }
  if (ideas.length === 0) ideas = [{ head: "", turn: 0, sentences: [] }];
  const head = `${cutToBytes(renderWho(message), Math.floor(line / 3))}: `;
  const opening = (ideas[0]?.sentences ?? []).map((s, i) => (i === 0 ? dropGreeting(s) : s));
  ideas[0] = { head, turn: 0, sentences: opening.filter((s) => s !== "") };
  ideas = ideas.map((idea) => ({ ...idea, head }));
  return compose({
    ideas,
    entities: findEntities(
      stepsAreText ? ideas.map((i) => i.sentences.join(" ")).join("\n") : text,
    ),
    pinned: new Set([0]),
    limit: line,
    ...(steps.length > 0 && !stepsAreText ? { note: stepsNote(steps) } : {}),
  });
}

// A clause said twice by the same speaker is worth one place in the line.
function distinct(ideas: Idea[]): Idea[] {
  const seen = new Set<string>();
  return ideas.filter((idea) => {
    const key = `${idea.head}\u0000${idea.sentences.join(" ")}`;
    if (idea.sentences.length === 0 || !seen.has(key)) {
      seen.add(key);
      return true;
    }
    return false;
  });
}

/** Two adjacent lines in one: both halves kept in order, each speaker's turns re-weighed. */
export function extractMerge(left: ContextLine, right: ContextLine, line: number): string {
  const a = lineIdeas(left.text);
  const b = lineIdeas(right.text, a.turns);
  // Items a child already listed were chosen once as worth keeping: they come first again.
  const carried: Entity[] = [...a.carried, ...b.carried].map((text, i) => ({
    text,
    kind: "carried",
    tier: 1,
    at: -1e6 + i,
  }));
  const seen = new Set(carried.map((c) => c.text));
  const found = findEntities(`${left.text} / ${right.text}`).filter((e) => !seen.has(e.text));
  const ideas = distinct([...a.ideas, ...b.ideas]);
  const opening = [a.ideas[0], b.ideas[0]].map((idea) => (idea ? ideas.indexOf(idea) : -1));
  return compose({
    ideas,
    entities: [...carried, ...found],
    pinned: new Set(opening.filter((i) => i >= 0)),
    limit: line,
  });
}

/**
 * The offline default: deterministic, no network, no model. It keeps what a reader cannot guess
 * back (who, names, numbers, ids, dates, paths) and the first sentence of each idea.
 */
export class ExtractiveSummarizer implements Summarizer {
  readonly name = "extractive";

  /** Offline: no model calls, no tokens; here so metrics read every summarizer the same way. */
  usage(): UsageTotals {
    return noUsage();
  }

  summarize(job: SummaryJob): Promise<SummaryResult> {
    const text =
      job.kind === "leaf"
        ? extractLeaf(job.message, job.line)
        : extractMerge(job.left, job.right, job.line);
    return Promise.resolve({ text, calls: 0 });
  }
}
