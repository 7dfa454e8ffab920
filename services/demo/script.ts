import type { Message } from "../../shared/events.ts";

/** A fact hidden in the conversation, to find again by zooming. */
export interface PlantedFact {
  position: number;
  text: string;
}

const SPEAKERS = ["Ana", "Bruno", "agent"] as const;
const TOPICS = [
  "the quarterly report draft",
  "the Lisbon office move",
  "invoice reconciliation for March",
  "the onboarding checklist",
  "server costs on the staging cluster",
  "the customer survey results",
  "the holiday rota",
  "the API rate limits",
];
const VERBS = [
  "asked about",
  "proposed changes to",
  "summarized",
  "raised a concern on",
  "agreed on",
];

// A tiny deterministic generator (LCG): the same script every run, no clock, no Math.random.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export function plantedFacts(count: number): PlantedFact[] {
  return [
    {
      position: Math.floor(count * 0.05),
      text: "The door code of the Lisbon storage room is 7319.",
    },
    {
      position: Math.floor(count * 0.41),
      text: "Bruno's passport expires on 2027-03-14, renew it before the Tokyo trip.",
    },
    {
      position: Math.floor(count * 0.77),
      text: "The backup encryption passphrase hint is 'purple walrus'.",
    },
  ];
}

/** The scripted conversation: `count` messages, a fact planted at each fact's position. */
export function* script(
  thread: string,
  count: number,
  start = Date.UTC(2026, 0, 5, 8),
): Generator<Message> {
  const next = rng(42);
  const facts = new Map(plantedFacts(count).map((f) => [f.position, f.text]));
  for (let i = 0; i < count; i++) {
    const from = SPEAKERS[i % 3] as string;
    const topic = TOPICS[Math.floor(next() * TOPICS.length)] as string;
    const verb = VERBS[Math.floor(next() * VERBS.length)] as string;
    const filler = Array.from(
      { length: 1 + Math.floor(next() * 4) },
      (_, k) => `point ${k + 1} about ${topic} needs follow-up`,
    ).join("; ");
    const fact = facts.get(i);
    const text = fact
      ? `By the way: ${fact} Please remember this.`
      : `${from} ${verb} ${topic}: ${filler}.`;
    yield {
      id: `${thread}-${i}`,
      thread,
      at: new Date(start + i * 45_000).toISOString(),
      from,
      to: from === "agent" ? "Ana" : "agent",
      role: from === "agent" ? "assistant" : "user",
      text,
    };
  }
}
