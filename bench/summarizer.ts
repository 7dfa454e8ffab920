// Lines per second of the offline extractive summarizer: leaves from chat-like messages of
// mixed sizes, then merges of those leaves, pairwise, as the outline's batches would do.
import { performance } from "node:perf_hooks";
import type { Message } from "../shared/events.ts";
import { extractLeaf, extractMerge } from "../services/summarizer/extractive.ts";
import { rng } from "./conversation.ts";

const LINE = 512;
const MESSAGES = 2_000;
const MIN_MS = 1_000;

const WORDS =
  "the deploy failed because staging config rate limit invoice run retry rollback review merge branch test passed cache prompt outline thread worker queue error timeout we should check whether it is done please".split(
    " ",
  );
const TOKENS = [
  "Acme Corp",
  "Zephyrine Okafor",
  "INV-20931",
  "BILL-4821",
  "9f3c2ab",
  "services/billing/limits.ts",
  "2026-11-28",
  "$4,250.75",
  "840ms",
  "https://grafana.example.com/d/billing",
  "测试数据",
  "🎉",
];

function corpus(count: number): Message[] {
  const random = rng(42);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const sentence = () => {
    const words = Array.from({ length: 6 + Math.floor(random() * 14) }, () =>
      random() < 0.12 ? pick(TOKENS) : pick(WORDS),
    );
    const text = words.join(" ");
    return `${text.charAt(0).toUpperCase()}${text.slice(1)}${pick([".", ".", "?", "!"])}`;
  };
  return Array.from({ length: count }, (_, i) => {
    // Mostly a few hundred bytes to a few KB; now and then a long paste.
    const paragraphs = random() < 0.05 ? 40 : 1 + Math.floor(random() * 6);
    const text = Array.from({ length: paragraphs }, () =>
      Array.from({ length: 1 + Math.floor(random() * 5) }, sentence).join(" "),
    ).join("\n\n");
    return {
      id: `m${i}`,
      thread: "bench",
      at: "2026-11-30T08:15:00Z",
      from: i % 2 ? "Bo" : "Ana",
      to: i % 2 ? "Ana" : "Bo",
      role: i % 2 ? "assistant" : "user",
      text,
    };
  });
}

function perSecond(count: number, ms: number): number {
  return Math.round((count / ms) * 1000);
}

export async function run(): Promise<Record<string, number>> {
  const messages = corpus(MESSAGES);
  const bytes = messages.reduce((sum, m) => sum + Buffer.byteLength(m.text), 0);

  let leaves: string[] = [];
  let leafCount = 0;
  const leafStart = performance.now();
  do {
    leaves = messages.map((m) => extractLeaf(m, LINE));
    leafCount += leaves.length;
  } while (performance.now() - leafStart < MIN_MS);
  const leafMs = performance.now() - leafStart;

  let mergeCount = 0;
  const mergeStart = performance.now();
  do {
    // Level by level up the tree, as batches merge pairs of pairs.
    let level = leaves;
    let n = 1;
    while (level.length > 1) {
      const next: string[] = [];
      for (let k = 0; k + 1 < level.length; k += 2) {
        next.push(
          extractMerge(
            { id: k * n, n, text: level[k] ?? "" },
            { id: (k + 1) * n, n, text: level[k + 1] ?? "" },
            LINE,
          ),
        );
      }
      mergeCount += next.length;
      level = next;
      n *= 2;
    }
  } while (performance.now() - mergeStart < MIN_MS);
  const mergeMs = performance.now() - mergeStart;

  const results = {
    "extractive.leaves_per_sec": perSecond(leafCount, leafMs),
    "extractive.merges_per_sec": perSecond(mergeCount, mergeMs),
    "extractive.leaf_input_mb_per_sec":
      Math.round(((bytes * (leafCount / MESSAGES)) / 1e6 / (leafMs / 1000)) * 10) / 10,
  };
  console.log(
    `summarizer (extractive, line ${LINE} bytes, ${MESSAGES} messages of ${Math.round(bytes / MESSAGES)} bytes on average):`,
  );
  console.log(`  leaves: ${results["extractive.leaves_per_sec"]} lines/s`);
  console.log(`  merges: ${results["extractive.merges_per_sec"]} lines/s`);
  console.log(`  input:  ${results["extractive.leaf_input_mb_per_sec"]} MB/s of message text`);
  return Promise.resolve(results);
}
