// A realistic conversation, generated deterministically: short replies, paragraphs, pasted logs,
// tool output carried as steps, and planted facts to find again.
import type { Message } from "../shared/events.ts";

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const WORDS =
  "the deploy of billing moved to Tuesday because staging config rate limit invoice retry rollback review merge branch test passed cache prompt outline worker queue error timeout customer asked whether refund export report dashboard latency region database index migration".split(
    " ",
  );

export interface PlantedFact {
  position: number;
  fact: string;
}

export interface GeneratedConversation {
  messages: Message[];
  facts: PlantedFact[];
}

export function generateConversation(
  thread: string,
  count: number,
  seed = 7,
): GeneratedConversation {
  const random = rng(seed);
  const words = (n: number): string => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(random() * WORDS.length)] ?? "");
    return out.join(" ");
  };
  const messages: Message[] = [];
  const facts: PlantedFact[] = [];
  for (let i = 0; i < count; i++) {
    const user = i % 2 === 0;
    const at = new Date(Date.UTC(2026, 0, 1) + i * 45_000).toISOString();
    const roll = random();
    let text: string;
    let steps: unknown[] | undefined;
    if (i % 500 === 250) {
      const fact = `The vault code for project ${i} is VX-${(i * 7919) % 100_000}`;
      facts.push({ position: i, fact });
      text = `${fact}. ${words(12)}.`;
    } else if (roll < 0.35) text = `${words(3 + Math.floor(random() * 8))}.`;
    else if (roll < 0.8) text = `${words(30 + Math.floor(random() * 120))}.`;
    else if (roll < 0.95 && !user) {
      text = `I ran the check. ${words(10)}.`;
      steps = [
        {
          tool: "shell",
          input: `grep -rn ${words(1)} services/`,
          output: words(200 + Math.floor(random() * 400)),
        },
      ];
    } else
      text = `Here is the log:\n${Array.from({ length: 20 + Math.floor(random() * 60) }, () => words(14)).join("\n")}`;
    messages.push({
      id: `${thread}-${i}`,
      thread,
      at,
      from: user ? "Ana" : "north",
      ...(user ? { to: "north" } : {}),
      role: user ? "user" : "assistant",
      text,
      ...(steps ? { steps } : {}),
    });
  }
  return { messages, facts };
}
