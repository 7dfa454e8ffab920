// Multi-session conversations for the fidelity bench: a few people and an assistant talk over
// weeks about trips, events, work and food; among the chatter they fix dates, decide, state
// preferences and change their minds. Each such fact is recorded with the message holding it
// and its key words: the words an answer to a question about it must contain. Facts sit at any
// sentence of a message, and the chatter around them uses the same names, places, numbers and
// decision words, so neither "the first sentence" nor "any capitalised word" finds them.
import type { Message } from "../../shared/events.ts";
import { rng } from "../conversation.ts";

export interface Fact {
  /** Position of the message that states it. */
  position: number;
  kind: "event" | "decision" | "preference" | "change" | "number" | "request" | "id";
  /** Words an answer needs, matched whole and case-insensitively in the covering line. */
  keys: string[];
  sentence: string;
}

export interface Sessions {
  messages: Message[];
  facts: Fact[];
}

const PEOPLE = [
  "Priya",
  "Tomás",
  "Dara",
  "Kenji",
  "Lucía",
  "Marek",
  "Ines",
  "Olu",
  "Sanne",
  "Ravi",
];
const ASSISTANT = "north";
const PLACES = [
  "Lisbon",
  "Porto",
  "Denver",
  "Halifax",
  "Kyoto",
  "Oaxaca",
  "Tromsø",
  "Ghent",
  "Cusco",
  "Tallinn",
  "Hobart",
  "Bergen",
  "Valencia",
  "Quito",
  "Leeds",
  "Nairobi",
  "Seville",
  "Split",
  "Galway",
  "Sapporo",
];
const VENDORS = [
  "Okta",
  "Auth0",
  "Stripe",
  "Adyen",
  "Linear",
  "Datadog",
  "Grafana",
  "Vercel",
  "Fastly",
  "Twilio",
  "Zendesk",
  "Airtable",
];
const EVENTS = [
  "wedding",
  "offsite",
  "launch party",
  "retreat",
  "housewarming",
  "board meeting",
  "hackathon",
  "recital",
  "marathon",
  "reunion",
  "workshop",
  "kickoff",
];
const PROJECTS: [string, string][] = [
  ["SSO rollout", "SSO"],
  ["billing migration", "billing"],
  ["mobile release", "mobile"],
  ["data export", "export"],
  ["onboarding flow", "onboarding"],
  ["pricing page", "pricing"],
  ["search rewrite", "search"],
  ["payroll switch", "payroll"],
];
const RELATIVES = ["sister", "brother", "cousin", "aunt", "uncle", "mother", "father", "niece"];
const MONTHS = ["March", "April", "May", "June", "July", "August", "September", "October"];
const DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
const DOCS = ["contract draft", "slide deck", "budget sheet", "floor plan", "packing list"];
const FOODS = ["peanuts", "shellfish", "gluten", "dairy", "sesame", "mushrooms"];
const DRINKS = ["oat milk", "green tea", "decaf", "sparkling water", "kombucha"];
const SEATS = ["aisle", "window"];
const TOPICS = [
  "the weather",
  "the new coffee machine",
  "that podcast",
  "the standup",
  "the gym",
  "the train strike",
  "the quarterly review",
  "the office plants",
];

type Random = () => number;
const pick = <T>(random: Random, list: readonly T[]): T =>
  list[Math.floor(random() * list.length)] as T;
const ordinal = (n: number): string =>
  `${n}${n % 10 === 1 && n !== 11 ? "st" : n % 10 === 2 && n !== 12 ? "nd" : n % 10 === 3 && n !== 13 ? "rd" : "th"}`;
const dateText = (random: Random): string =>
  random() < 0.5
    ? `${pick(random, MONTHS)} ${1 + Math.floor(random() * 28)}`
    : `2026-${String(3 + Math.floor(random() * 8)).padStart(2, "0")}-${String(1 + Math.floor(random() * 28)).padStart(2, "0")}`;
const money = (random: Random): string =>
  `$${(1 + Math.floor(random() * 40)).toString()},${String(Math.floor(random() * 10) * 100).padStart(3, "0")}`;

/** Chatter: no fact, but the same kinds of words facts use (names, places, numbers, "decide"). */
function chatter(random: Random, people: readonly string[]): string {
  const p = pick(random, people);
  const templates: (() => string)[] = [
    () => `Haha, yes.`,
    () => `Sounds good to me.`,
    () => `Totally agree.`,
    () => `Let me check and get back to you.`,
    () => `I'll think about it over the weekend.`,
    () => `We should probably decide soon, though.`,
    () => `Can you believe it's already ${pick(random, MONTHS)}?`,
    () => `Did anyone else hear about ${pick(random, TOPICS)}?`,
    () => `Honestly ${pick(random, TOPICS)} is all anyone talked about today.`,
    () =>
      `${p} said the traffic was awful, it took ${10 + Math.floor(random() * 80)} minutes to get in.`,
    () => `I keep thinking about ${pick(random, PLACES)}, the food there was unreal.`,
    () => `My ${pick(random, RELATIVES)} keeps sending me videos of her cat.`,
    () => `The ${pick(random, PROJECTS)[0]} standup ran long again.`,
    () => `${pick(random, VENDORS)}'s dashboard was slow this morning, but it recovered.`,
    () => `I pushed a small fix to the ${pick(random, PROJECTS)[1]} branch, nothing exciting.`,
    () => `Not sure yet, maybe we look at it again on ${pick(random, DAYS)}.`,
    () => `Please don't make me sit through another two-hour call.`,
    () => `I decided to finally clean my desk, it only took ${2 + Math.floor(random() * 5)} hours.`,
    () =>
      `We could do something in ${pick(random, PLACES)} or ${pick(random, PLACES)}, no strong feelings.`,
    () => `Remember when ${p} got lost in ${pick(random, PLACES)} for a whole afternoon?`,
    () =>
      `That reminds me, the printer on the ${ordinal(2 + Math.floor(random() * 6))} floor is broken again.`,
    () => `Thanks, that helps a lot.`,
    () => `Good point, I hadn't thought of that.`,
    () => `It was around ${money(random)} last time, if I remember right, but prices change.`,
    () => `I'm running late, start without me.`,
    () => `The ${pick(random, EVENTS)} last year was a bit chaotic, to be fair.`,
    // Chatter as dense as a fact: names, places, events, vendors, dates and amounts that are
    // not decided or stated as facts, so exact tokens alone do not find the facts.
    () =>
      `${p} went hiking near ${pick(random, PLACES)} on ${dateText(random)} and the trail was pure mud.`,
    () =>
      `${pick(random, VENDORS)}'s invoice went up to ${money(random)} in ${pick(random, MONTHS)}, which nobody expected.`,
    () =>
      `Is the ${pick(random, EVENTS)} planning doc still in the shared drive, or did ${p} move it?`,
    () =>
      `My ${pick(random, RELATIVES)} flew back from ${pick(random, PLACES)} via ${pick(random, PLACES)} with a nine-hour layover.`,
    () =>
      `The ${pick(random, PROJECTS)[0]} retro is on the calendar for ${pick(random, DAYS)}, but attendance is optional.`,
    () => `${p} found a bakery near the ${pick(random, PLACES)} office that does cardamom buns.`,
    () =>
      `Someone compared ${pick(random, VENDORS)} with ${pick(random, VENDORS)} last spring, the spreadsheet is somewhere.`,
    () =>
      `I read that ${pick(random, PLACES)} gets about ${20 + Math.floor(random() * 200)} rainy days a year, which explains a lot.`,
    () =>
      `The ${pick(random, DOCS)} from the ${pick(random, EVENTS)} has ${3 + Math.floor(random() * 30)} comments nobody resolved.`,
    () =>
      `${p} asked whether the ${pick(random, EVENTS)} could be in ${pick(random, PLACES)}, but nobody answered.`,
    () =>
      `We talked about moving the ${pick(random, PROJECTS)[0]} to ${pick(random, VENDORS)}, but it never went anywhere.`,
    () =>
      `The ${pick(random, PLACES)} trip photos are finally up, ${10 + Math.floor(random() * 300)} of them.`,
    () =>
      `${p}'s ${pick(random, RELATIVES)} recommended a ramen place in ${pick(random, PLACES)}, apparently the broth takes two days.`,
  ];
  return pick(random, templates)();
}

/** An assistant's reply: options and caveats, with places, dates and vendors that are not facts. */
function assistantChatter(random: Random): string {
  const templates: (() => string)[] = [
    () => `Here are a few things to weigh.`,
    () =>
      `- ${pick(random, PLACES)} is cheaper in the shoulder season, around ${money(random)} for the group.`,
    () => `- ${pick(random, PLACES)} has better connections but fewer venues.`,
    () =>
      `One option is to compare ${pick(random, VENDORS)} and ${pick(random, VENDORS)} on price first.`,
    () => `I can draft a comparison if that helps.`,
    () => `Keep in mind that availability around ${dateText(random)} tends to be tight.`,
    () => `Let me know which one you prefer and I will note it.`,
    () => `The usual lead time for something like this is ${2 + Math.floor(random() * 6)} weeks.`,
    () => `If you want, I can also check train options.`,
    () => `I summarized the thread so far in the doc.`,
    () =>
      `Last time the ${pick(random, EVENTS)} was in ${pick(random, PLACES)} and it cost about ${money(random)}.`,
    () =>
      `${pick(random, VENDORS)} and ${pick(random, VENDORS)} both offer a trial until ${dateText(random)}.`,
    () =>
      `Flights to ${pick(random, PLACES)} are cheapest on ${pick(random, DAYS)}s, roughly ${money(random)} for four.`,
    () =>
      `The ${pick(random, PROJECTS)[0]} estimate I saw was ${2 + Math.floor(random() * 10)} weeks, but that was before the holidays.`,
    () =>
      `If the ${pick(random, EVENTS)} slips past ${pick(random, MONTHS)}, venues in ${pick(random, PLACES)} open up again.`,
  ];
  return pick(random, templates)();
}

interface Planned {
  kind: Fact["kind"];
  sentence: string;
  keys: string[];
  by?: string;
}

/** One fact, in one of several wordings (some with decision words, some without). */
function factOf(random: Random, people: readonly string[], state: ConversationState): Planned {
  const p = pick(random, people);
  const roll = random();
  if (roll < 0.16) {
    const event = pick(random, EVENTS);
    const date = dateText(random);
    const sentence = pick(random, [
      `${p}'s ${pick(random, RELATIVES)}'s ${event} is on ${date}.`,
      `Heads up, the ${event} landed on ${date}.`,
      `Mark your calendars: the ${event} is ${date}.`,
      `So the ${event} happens on ${date}, after all that back and forth.`,
    ]);
    return { kind: "event", sentence, keys: [event, date] };
  }
  if (roll < 0.32) {
    const [project, key] = pick(random, PROJECTS);
    const vendor = pick(random, VENDORS);
    const sentence = pick(random, [
      `We're going with ${vendor} for the ${project}.`,
      `Decision: ${vendor} for the ${project}, rollout by the ${ordinal(1 + Math.floor(random() * 28))}.`,
      `${vendor} won the bake-off for the ${project}, so that's settled.`,
      `For the ${project} it's ${vendor}, I signed the order this morning.`,
    ]);
    return { kind: "decision", sentence, keys: [key, vendor] };
  }
  if (roll < 0.46) {
    const sentences: [string, string[]][] = [
      [`${p} is allergic to ${pick(random, FOODS)}.`, []],
      [`${p} only drinks ${pick(random, DRINKS)} these days.`, []],
      [`For long flights ${p} always wants an ${pick(random, SEATS)} seat.`, []],
    ];
    const [sentence] = pick(random, sentences);
    const item = [...FOODS, ...DRINKS, ...SEATS].find((w) => sentence.includes(` ${w}`)) ?? "";
    return { kind: "preference", sentence, keys: [p, item] };
  }
  if (roll < 0.58 && state.plans.length > 0) {
    // A change of mind about a plan made sessions ago: only the new value is the answer.
    const plan = state.plans.splice(Math.floor(random() * state.plans.length), 1)[0] as Plan;
    const next = pick(
      random,
      PLACES.filter((place) => place !== plan.place),
    );
    const sentence = pick(random, [
      `Change of plans: the ${plan.event} moves to ${next}, ${plan.place} is fully booked.`,
      `Actually, scratch ${plan.place}, we're doing the ${plan.event} in ${next} instead.`,
      `I talked to everyone and the ${plan.event} will be in ${next} now, not ${plan.place}.`,
    ]);
    return { kind: "change", sentence, keys: [plan.event, next] };
  }
  if (roll < 0.7) {
    const event = pick(random, EVENTS);
    const place = pick(random, PLACES);
    state.plans.push({ event, place });
    const sentence = pick(random, [
      `Let's hold the ${event} in ${place}.`,
      `The ${event} is going to be in ${place} this year.`,
      `I booked a venue in ${place} for the ${event}.`,
    ]);
    return { kind: "event", sentence, keys: [event, place] };
  }
  if (roll < 0.8) {
    const [project, key] = pick(random, PROJECTS);
    const amount = money(random);
    const sentence = pick(random, [
      `The budget for the ${project} is capped at ${amount}.`,
      `Finance approved ${amount} for the ${project}, not a cent more.`,
    ]);
    return { kind: "number", sentence, keys: [key, amount] };
  }
  if (roll < 0.9) {
    const doc = pick(random, DOCS);
    const day = pick(random, DAYS);
    const sentence = pick(random, [
      `Can you send me the ${doc} by ${day}?`,
      `I need the ${doc} before ${day}, please.`,
    ]);
    return { kind: "request", sentence, keys: [doc, day] };
  }
  const [project, key] = pick(random, PROJECTS);
  const id = `${key.toUpperCase().slice(0, 4)}-${100 + Math.floor(random() * 9_900)}`;
  const sentence = pick(random, [
    `The ticket for the ${project} is ${id}.`,
    `I filed ${id} for the ${project} so we stop losing track.`,
  ]);
  return { kind: "id", sentence, keys: [id] };
}

interface Plan {
  event: string;
  place: string;
}
interface ConversationState {
  plans: Plan[];
}

/**
 * A conversation of `sessions` sessions, each a day or more after the last, each 30 to 110
 * messages with 2 to 6 facts. Deterministic for a seed.
 */
export function multiSession(thread: string, seed: number, sessions = 24): Sessions {
  const random = rng(seed);
  const people = [...PEOPLE].sort(() => random() - 0.5).slice(0, 3);
  const state: ConversationState = { plans: [] };
  const messages: Message[] = [];
  const facts: Fact[] = [];
  let clock = Date.UTC(2026, 1, 2, 9, 0, 0);
  for (let s = 0; s < sessions; s++) {
    clock += (1 + Math.floor(random() * 6)) * 86_400_000;
    const count = 30 + Math.floor(random() * 80);
    const planted = new Map<number, Planned[]>();
    const factCount = 2 + Math.floor(random() * 5);
    for (let f = 0; f < factCount; f++) {
      const at = Math.floor(random() * count);
      planted.set(at, [...(planted.get(at) ?? []), factOf(random, people, state)]);
    }
    let speaker = pick(random, people);
    for (let i = 0; i < count; i++) {
      clock += (20 + Math.floor(random() * 280)) * 1_000;
      // Mostly people talking to each other; the assistant answers now and then, at length.
      const assistant = random() < 0.18;
      if (!assistant && random() < 0.7)
        speaker = pick(
          random,
          people.filter((p) => p !== speaker),
        );
      const from = assistant ? ASSISTANT : speaker;
      const size = assistant
        ? 3 + Math.floor(random() * 10)
        : random() < 0.55
          ? 1 + Math.floor(random() * 2)
          : random() < 0.8
            ? 3 + Math.floor(random() * 4)
            : 7 + Math.floor(random() * 9);
      const sentences = Array.from({ length: size }, () =>
        assistant ? assistantChatter(random) : chatter(random, people),
      );
      const position = messages.length;
      for (const fact of planted.get(i) ?? []) {
        const at = Math.floor(random() * (sentences.length + 1));
        sentences.splice(at, 0, fact.sentence);
        facts.push({ position, kind: fact.kind, keys: fact.keys, sentence: fact.sentence });
      }
      const text = assistant
        ? sentences.join(random() < 0.5 ? "\n" : " ")
        : sentences.join(random() < 0.15 ? "\n\n" : " ");
      messages.push({
        id: `${thread}-${position}`,
        thread,
        at: new Date(clock).toISOString(),
        from,
        ...(assistant ? { to: pick(random, people) } : {}),
        role: assistant ? "assistant" : "user",
        text,
      });
    }
  }
  return { messages, facts };
}

/** Whether every key word stands in `line`, whole (not inside another word), in any case. */
export function holds(line: string, keys: readonly string[]): boolean {
  const lower = line.toLowerCase();
  return keys.every((key) => {
    const k = key.toLowerCase();
    for (let at = lower.indexOf(k); at >= 0; at = lower.indexOf(k, at + 1)) {
      const before = lower[at - 1] ?? " ";
      const after = lower[at + k.length] ?? " ";
      if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) return true;
    }
    return false;
  });
}
