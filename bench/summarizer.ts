// Lines per second of the offline extractive summarizer: leaves from chat-like messages of
// mixed sizes, then merges of those leaves, pairwise up the tree, as the outline's batches would
// do: each merge with its children's digests (as the summarizer holds them since it built the
// children), and again from the lines alone (children built before a restart, on another
// instance, or free): the same lines, the second reading every child's line again. The
// summarizer before issue 19 runs the same corpus in the same process, interleaved, as the
// baseline.
import { performance } from "node:perf_hooks";
import type { Message } from "../shared/events.ts";
import type { ContextLine } from "../shared/jobs.ts";
import { forgetWeighed, type Digest } from "../services/summarizer/extract/digest.ts";
import { leafWork, mergeWork } from "../services/summarizer/extract/work.ts";
import { rng } from "./conversation.ts";
import { baselineExtractive, type BaselineExtractive } from "./support/baseline.ts";

const LINE = 512;
const MESSAGES = 2_000;
const MIN_MS = 1_000;
const ROUNDS = 3;

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

export function corpus(count: number): Message[] {
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

/** Empties the summarizer's memo of weighed clauses; 0 lines. */
function forgotten(): number {
  forgetWeighed();
  return 0;
}

function perSecond(count: number, ms: number): number {
  return Math.round((count / ms) * 1000);
}

interface Built {
  text: string;
  digest?: Digest;
}

/** Merges level by level up the tree; returns how many (and adds their lines to `lines`). */
function mergeUp(
  leaves: readonly Built[],
  merge: (left: ContextLine, right: ContextLine, l: Built, r: Built) => Built,
  lines?: string[],
): number {
  let count = 0;
  let level = leaves;
  let n = 1;
  while (level.length > 1) {
    const next: Built[] = [];
    for (let k = 0; k + 1 < level.length; k += 2) {
      const l = level[k] as Built;
      const r = level[k + 1] as Built;
      next.push(merge({ id: k * n, n, text: l.text }, { id: (k + 1) * n, n, text: r.text }, l, r));
    }
    count += next.length;
    lines?.push(...next.map((b) => b.text));
    level = next;
    n *= 2;
  }
  return count;
}

/**
 * Runs `work` (returning how many lines it made) for at least MIN_MS: lines per second of wall
 * time, and per second of this process's CPU time (steadier on a shared machine).
 */
function rate(work: () => number): { wall: number; cpu: number } {
  let count = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  do count += work();
  while (performance.now() - start < MIN_MS);
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wall: perSecond(count, wall), cpu: perSecond(count, (used.user + used.system) / 1000) };
}

export async function run(): Promise<Record<string, number>> {
  const messages = corpus(MESSAGES);
  const bytes = messages.reduce((sum, m) => sum + Buffer.byteLength(m.text), 0);
  const base: BaselineExtractive | undefined = await baselineExtractive();
  const leaf = (m: Message, i: number) =>
    leafWork({ kind: "leaf", message: m, position: i, line: LINE });
  const leaves: Built[] = messages.map(leaf);
  const baseLeaves: Built[] = base
    ? messages.map((m) => ({ text: base.extractLeaf(m, LINE) }))
    : [];
  // Each run starts as a process that just started would: no clause weighed yet (the memo in
  // extract/digest.ts), so a second run over the same corpus does not find its lines' clauses.
  const warm = (lines?: string[]) =>
    forgotten() +
    mergeUp(
      leaves,
      (left, right, l, r) =>
        mergeWork({
          kind: "merge",
          left,
          right,
          line: LINE,
          ...(l.digest ? { leftDigest: l.digest } : {}),
          ...(r.digest ? { rightDigest: r.digest } : {}),
        }),
      lines,
    );
  const cold = (lines?: string[]) =>
    forgotten() +
    mergeUp(
      leaves,
      (left, right) => ({ text: mergeWork({ kind: "merge", left, right, line: LINE }).text }),
      lines,
    );
  // Held digests only spare reading lines: every merged line is the same without them.
  const held: string[] = [];
  const read: string[] = [];
  warm(held);
  cold(read);
  if (held.length !== read.length || held.some((text, i) => text !== read[i]))
    throw new Error("merges with held digests differ from merges from lines alone");
  const baseMerges = () =>
    mergeUp(baseLeaves, (left, right) => ({
      text: (base as BaselineExtractive).extractMerge(left, right, LINE),
    }));

  // Rounds interleaved (ours, then the baseline), each side keeping its best: the machine is shared.
  const sides: Record<string, () => number> = {
    leaves: () => forgotten() + messages.map(leaf).length,
    merges: () => warm(),
    merges_from_lines: () => cold(),
    ...(base
      ? {
          "before.leaves": () => messages.map((m) => base.extractLeaf(m, LINE)).length,
          "before.merges": baseMerges,
        }
      : {}),
  };
  const best = new Map<string, { wall: number; cpu: number }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, work] of Object.entries(sides)) {
      const r = rate(work);
      const was = best.get(name);
      best.set(name, {
        wall: Math.max(was?.wall ?? 0, r.wall),
        cpu: Math.max(was?.cpu ?? 0, r.cpu),
      });
    }
  }
  const results: Record<string, number> = {};
  for (const [name, r] of best) {
    results[`extractive.${name}_per_sec`] = r.wall;
    results[`extractive.${name}_per_cpu_sec`] = r.cpu;
  }
  const leafRate = results["extractive.leaves_per_sec"] ?? 0;
  results["extractive.leaf_input_mb_per_sec"] =
    Math.round(((leafRate * bytes) / MESSAGES / 1e6) * 10) / 10;
  console.log(
    `summarizer (extractive, line ${LINE} bytes, ${MESSAGES} messages of ${Math.round(bytes / MESSAGES)} bytes on average; best of ${ROUNDS} interleaved rounds):`,
  );
  const figure = (name: string) =>
    `${results[`extractive.${name}_per_sec`]} lines/s (${results[`extractive.${name}_per_cpu_sec`]} per CPU second)`;
  const was = (name: string) => (base ? `; before issue 19: ${figure(`before.${name}`)}` : "");
  console.log(`  leaves: ${figure("leaves")}${was("leaves")}`);
  console.log(
    `  merges: ${figure("merges")} with digests, ${figure("merges_from_lines")} from lines alone${was("merges")}`,
  );
  console.log(`  (every merged line the same with held digests and from lines alone)`);
  console.log(`  input:  ${results["extractive.leaf_input_mb_per_sec"]} MB/s of message text`);
  return results;
}
