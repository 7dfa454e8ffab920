// The extractive summarizer as it was before issue 19, for the benches to compare against in
// the same run: its services/summarizer and shared folders at BENCH_EXTRACTIVE_BASE, read from
// git into node_modules/.cache (so their imports resolve) and imported from there.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Message } from "../../shared/events.ts";
import type { ContextLine, Summarizer } from "../../shared/jobs.ts";

/** The main branch's commit issue 19 started from. */
export const EXTRACTIVE_BASE = process.env.BENCH_EXTRACTIVE_BASE ?? "5bdb013";

export interface BaselineExtractive {
  extractLeaf(message: Message, line: number): string;
  extractMerge(left: ContextLine, right: ContextLine, line: number): string;
  /** The whole summarizer (digests and all), as the service runs it. */
  ExtractiveSummarizer: new () => Summarizer;
}

/** The summarizer of `rev`, or undefined (said why) when git or the commit is not there. */
export async function baselineExtractive(
  rev = EXTRACTIVE_BASE,
): Promise<BaselineExtractive | undefined> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const dir = `${root}node_modules/.cache/outline-bench/extractive-${rev}`;
  try {
    if (!existsSync(`${dir}/services/summarizer/extractive.ts`)) {
      mkdirSync(dir, { recursive: true });
      const archive = execFileSync(
        "git",
        ["-C", root, "archive", rev, "services/summarizer", "shared"],
        { maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "pipe"] },
      );
      execFileSync("tar", ["-x", "-C", dir], { input: archive });
    }
  } catch (err) {
    console.log(
      `  (no baseline: commit ${rev} cannot be read from git (a shallow clone?): ${(err as Error).message.split("\n")[0]})`,
    );
    return undefined;
  }
  return (await import(
    pathToFileURL(`${dir}/services/summarizer/extractive.ts`).href
  )) as BaselineExtractive;
}

/**
 * The summarizer class of `rev` (a commit, tag or branch, resolved to its commit so a moving
 * branch is read afresh), or undefined (said why) when git cannot read it.
 */
export async function extractiveAt(
  rev: string,
): Promise<{ commit: string; Summarizer: new () => Summarizer } | undefined> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  let commit: string;
  try {
    commit = execFileSync("git", ["-C", root, "rev-parse", "--short=12", `${rev}^{commit}`], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }).trim();
  } catch (err) {
    console.log(`  (no summarizer at ${rev}: ${(err as Error).message.split("\n")[0]})`);
    return undefined;
  }
  const module = await baselineExtractive(commit);
  return module ? { commit, Summarizer: module.ExtractiveSummarizer } : undefined;
}
