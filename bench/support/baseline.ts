// The extractive summarizer as it was before issue 19, for the benches to compare against in
// the same run: its services/summarizer and shared folders at BENCH_EXTRACTIVE_BASE, read from
// git into node_modules/.cache (so their imports resolve) and imported from there.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Message } from "../../shared/events.ts";
import type { ContextLine } from "../../shared/jobs.ts";

/** The main branch's commit issue 19 started from. */
export const EXTRACTIVE_BASE = process.env.BENCH_EXTRACTIVE_BASE ?? "5bdb013";

export interface BaselineExtractive {
  extractLeaf(message: Message, line: number): string;
  extractMerge(left: ContextLine, right: ContextLine, line: number): string;
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
