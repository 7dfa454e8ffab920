// Fidelity on conversations people wrote (bench/data/realtalk, or BENCH_FIDELITY_REAL_DATA): each
// conversation runs through the real core (appendMessage, takeJobs, jobFor, summaryBuilt) at the
// default settings and with the outline sized to 8× smaller than what it covers; then, of the
// questions whose gold answer stands word for word in their evidence messages (answerable,
// bench/support/answers.ts), the share whose answer words all stand in the outline lines that
// cover that evidence. Questions with evidence still in the tail (whole, so kept) are counted
// apart. Strategies side by side: a cut (the first bytes of each message), the summarizer at
// BENCH_FIDELITY_REAL_BASE read from git (before), and today's (after).
import { fileURLToPath } from "node:url";
import type { Line } from "../shared/batch.ts";
import { utf8Bytes } from "../shared/bytes.ts";
import type { SummaryJob } from "../shared/jobs.ts";
import { DEFAULT_SETTINGS, type CoreSettings } from "../shared/settings.ts";
import { outlineIndexOf } from "../shared/thread.ts";
import { renderSource } from "../services/summarizer/source.ts";
import {
  after,
  coveredBytes,
  cut,
  outlineOf,
  printSamples,
  sourceBytes,
  summarizerStrategy,
  type Strategy,
} from "./fidelity.ts";
import {
  answerWords,
  holdsAll,
  LINE_CLASSES,
  lineClass,
  type LineClass,
} from "./support/answers.ts";
import { extractiveAt } from "./support/baseline.ts";
import { loadDialogues, type Dialogue } from "./support/dialogues.ts";

const DATA =
  process.env.BENCH_FIDELITY_REAL_DATA ??
  fileURLToPath(new URL("./data/realtalk/realtalk.json.gz", import.meta.url));
/** The summarizer to compare against: main when issue 46's summarizer work began; "" for none. */
const BASE = process.env.BENCH_FIDELITY_REAL_BASE ?? "e6c7215";
/** Merged lines to print, before and after (levels 3 to 7), from the first conversation. */
const SAMPLES = Number(process.env.BENCH_FIDELITY_SAMPLES ?? 0);
/** "0" skips running the synthetic bench (bench/fidelity.ts) for its figure. */
const SYNTHETIC = process.env.BENCH_FIDELITY_REAL_SYNTHETIC !== "0";
const LINE = DEFAULT_SETTINGS.line;
/**
 * These conversations are a few hundred KB: the default tail (12,000 to 48,000 tokens) would
 * hold most of each whole, so the tail is scaled down with them (tokens, as HISTORY_TAIL).
 */
const TAIL = (process.env.BENCH_FIDELITY_REAL_TAIL ?? "1000,2000").split(",").map(Number) as [
  number,
  number,
];
const BASE_SETTINGS: CoreSettings = { ...DEFAULT_SETTINGS, tail: TAIL };
const CONFIGS = ["default", "x8"] as const;

async function before(): Promise<Strategy | undefined> {
  if (!BASE) return undefined;
  const at = await extractiveAt(BASE);
  if (!at) return undefined;
  console.log(`  before: the summarizer at ${at.commit}`);
  return summarizerStrategy("before", at.Summarizer);
}

interface Tally {
  kept: number;
  judged: number;
}

interface Score {
  judged: number;
  kept: number;
  /** Answer words kept, summed over judged questions as a share of each one's words. */
  words: number;
  byClass: Map<LineClass, Tally>;
  compression: number[];
  merged: Map<string, string>;
}

/** Why questions are not judged: the same for every strategy (they depend on the data alone). */
interface Exclusions {
  questions: number;
  noEvidence: number;
  noWords: number;
  notAnswerable: number;
}

/** The questions that can be judged lexically, with their answer words. */
function answerable(
  dialogue: Dialogue,
  excluded: Exclusions,
): { evidence: number[]; words: string[] }[] {
  const out: { evidence: number[]; words: string[] }[] = [];
  for (const q of dialogue.questions) {
    excluded.questions += 1;
    if (q.evidence.length === 0) {
      excluded.noEvidence += 1;
      continue;
    }
    const words = answerWords(q.answer);
    if (words.length === 0) {
      excluded.noWords += 1;
      continue;
    }
    const source = q.evidence.map((p) =>
      renderSource(dialogue.messages[p] ?? { from: "", text: "" }),
    );
    if (!holdsAll(source.join(" "), words)) {
      excluded.notAnswerable += 1;
      continue;
    }
    out.push({ evidence: q.evidence, words });
  }
  return out;
}

const emptyScore = (): Score => ({
  judged: 0,
  kept: 0,
  words: 0,
  byClass: new Map(LINE_CLASSES.map((c) => [c, { kept: 0, judged: 0 }])),
  compression: [],
  merged: new Map(),
});

const share = (t: Tally) => (t.kept / Math.max(1, t.judged)).toFixed(3);

export async function run(): Promise<Record<string, number>> {
  const dialogues = loadDialogues(DATA);
  const strategies = [cut, await before(), after].filter((s): s is Strategy => !!s);
  const scores = new Map<string, Score>();
  const inTail = new Map<string, number>();
  const excluded: Exclusions = { questions: 0, noEvidence: 0, noWords: 0, notAnswerable: 0 };
  let judgeable = 0;
  for (const [i, dialogue] of dialogues.entries()) {
    const questions = answerable(dialogue, excluded);
    judgeable += questions.length;
    const { messages } = dialogue;
    const covered = await coveredBytes(messages, BASE_SETTINGS);
    const eighth = Math.floor(covered / 8);
    const settings: Record<(typeof CONFIGS)[number], CoreSettings> = {
      default: BASE_SETTINGS,
      x8: { ...BASE_SETTINGS, outline: [eighth, eighth + 2 * LINE] },
    };
    const bytes = messages.reduce((n, m) => n + utf8Bytes(m.text), 0);
    const row: string[] = [];
    for (const config of CONFIGS) {
      for (const strategy of strategies) {
        const key = `${config}.${strategy.name}`;
        const score = scores.get(key) ?? emptyScore();
        scores.set(key, score);
        const summarize = strategy.make();
        const state = await outlineOf(messages, settings[config], async (job: SummaryJob) => {
          const text = await summarize(job);
          if (i === 0 && job.kind === "merge") score.merged.set(`${job.level}:${job.index}`, text);
          return text;
        });
        score.compression.push(
          sourceBytes(messages, state.boundary) / Math.max(1, state.outlineBytes),
        );
        let kept = 0;
        let judged = 0;
        let tail = 0;
        for (const q of questions) {
          if ((q.evidence.at(-1) as number) >= state.boundary) {
            tail += 1;
            continue;
          }
          const lines = [...new Set(q.evidence.map((p) => outlineIndexOf(state.outline, p)))].map(
            (at) => state.outline[at] as Line,
          );
          const widest = Math.max(...lines.map((l) => 1 << l.level));
          const tally = score.byClass.get(lineClass(widest)) as Tally;
          const covering = lines.map((l) => l.text).join(" ");
          const holds = holdsAll(covering, q.words);
          score.words += q.words.filter((w) => holdsAll(covering, [w])).length / q.words.length;
          judged += 1;
          tally.judged += 1;
          if (holds) {
            kept += 1;
            tally.kept += 1;
          }
        }
        score.judged += judged;
        score.kept += kept;
        inTail.set(config, (inTail.get(config) ?? 0) + (strategy === after ? tail : 0));
        row.push(`${config} ${strategy.name} ${kept}/${judged}`);
      }
    }
    console.log(
      `  ${dialogue.name}: ${messages.length} messages, ${(bytes / 1e3).toFixed(0)} KB, ${dialogue.questions.length} questions (${questions.length} answerable); ${(covered / 1e3).toFixed(0)} KB in the outline at the end; ${row.join(", ")}`,
    );
  }
  const figures: Record<string, number> = {};
  for (const [key, score] of scores) {
    const mean = score.compression.reduce((x, y) => x + y, 0) / score.compression.length;
    figures[`fidelity_real.${key}`] = Number(share(score));
    figures[`fidelity_real.${key}.compression`] = Number(mean.toFixed(1));
    figures[`fidelity_real.${key}.questions`] = score.judged;
    figures[`fidelity_real.${key}.words`] = Number(
      (score.words / Math.max(1, score.judged)).toFixed(3),
    );
  }
  for (const config of CONFIGS)
    figures[`fidelity_real.${config}.in_tail`] = inTail.get(config) ?? 0;
  figures["fidelity_real.answerable"] = judgeable;

  console.log(
    `\n  ${excluded.questions} questions: ${excluded.noEvidence} without evidence in the conversation, ${excluded.noWords} whose answer has no content word, ${excluded.notAnswerable} whose answer words are not all in the evidence (dates, inference); ${judgeable} answerable`,
  );
  console.log(
    "\n  answer words kept in the lines covering the evidence (answerable questions whose evidence is in the outline):\n",
  );
  console.log(
    `  | strategy | ${CONFIGS.map((c) => `${c} | answer words | questions`).join(" | ")} |`,
  );
  console.log(`  |---|${CONFIGS.map(() => "---|---|---|").join("")}`);
  for (const s of strategies) {
    const cells = CONFIGS.map((config) => {
      const k = `fidelity_real.${config}.${s.name}`;
      return `${figures[k]} (${figures[`${k}.compression`]}×) | ${figures[`${k}.words`]} | ${figures[`${k}.questions`]}`;
    });
    console.log(`  | ${s.name} | ${cells.join(" | ")} |`);
  }
  console.log(
    `  evidence still in the tail (whole, not judged): ${CONFIGS.map((c) => `${c} ${inTail.get(c)}`).join(", ")}`,
  );
  for (const config of CONFIGS) {
    console.log(`\n  ${config}, by messages a line (kept/questions):\n`);
    console.log(`  | messages a line | ${strategies.map((s) => s.name).join(" | ")} |`);
    console.log(`  |---|${strategies.map(() => "---|").join("")}`);
    for (const c of LINE_CLASSES) {
      const cells = strategies.map((s) => {
        const t = (scores.get(`${config}.${s.name}`) as Score).byClass.get(c) as Tally;
        return `${t.kept}/${t.judged} (${Math.round((100 * t.kept) / Math.max(1, t.judged))}%)`;
      });
      console.log(`  | ${c} | ${cells.join(" | ")} |`);
    }
  }
  if (SYNTHETIC) {
    // The synthetic bench's own figure beside this one, from the same code in the same run.
    const log = console.log;
    console.log = () => {};
    let synthetic: Record<string, number>;
    try {
      synthetic = await (await import("./fidelity.ts")).run();
    } finally {
      console.log = log;
    }
    for (const config of CONFIGS) {
      const value = synthetic[`fidelity.${config}.after`];
      if (value !== undefined) figures[`fidelity_real.synthetic.${config}.after`] = value;
    }
    console.log(
      `\n  synthetic (bench -- fidelity, today's summarizer): ${CONFIGS.map((c) => `${c} ${synthetic[`fidelity.${c}.after`]} (${synthetic[`fidelity.${c}.after.compression`]}×)`).join(", ")}`,
    );
  }
  const b = scores.get("x8.before");
  const a = scores.get("x8.after");
  if (SAMPLES > 0 && b && a) {
    console.log(`\n  merged lines of ${dialogues[0]?.name} at 8×, levels 3 to 7:`);
    printSamples(b, a, SAMPLES);
  }
  return figures;
}
