import type { OutlineSnapshot } from "../../shared/snapshot.ts";
import { parse } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline outline <thread> [--json]

Prints a thread's outline snapshot: one row per line with its level, name id+n, size in bytes,
the time of its newest message and its text; then the tail.

  --json   the snapshot as stored (README.md, "The contract")`;

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** The first line: what the thread holds, where the outline ends and the tail begins. */
export function header(s: OutlineSnapshot): string {
  const covers = s.boundary > 0 ? `covers messages 0–${s.boundary - 1}` : "covers none yet";
  return `thread ${s.thread}: ${count(s.count, "message")}; outline ${count(s.lines.length, "line")}, ${count(s.bytes, "byte")}, ${covers}; tail ${s.tail.length} whole; cut at ${s.cutAt ?? "never"}; seq ${s.seq}`;
}

export const outline: Command = {
  name: "outline",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(argv, { json: { type: "boolean" } }, 1);
    if (args.help) return out.help(USAGE);
    return withSession(async ({ operations }) => {
      const s = await operations.outline({ thread: args.positionals[0] ?? "" });
      if (args.values.json === true) {
        out.line(JSON.stringify(s, null, 2));
        return 0;
      }
      out.line(header(s));
      const held = s.pending?.held ?? 0;
      if (s.pending && (s.pending.jobs > 0 || s.pending.cuts > 0 || held > 0)) {
        out.line(
          `pending: ${s.pending.jobs} summaries, ${s.pending.cuts} cuts${s.pending.merging ? ", merging" : ""}${held > 0 ? `; ${held} due nodes held for their summarizer group (HISTORY_GROUP)` : ""}`,
        );
      }
      const width = Math.max(4, ...s.lines.map((l) => `${l.id}+${l.n}`.length));
      out.line(
        `${"level".padEnd(6)}${"line".padEnd(width + 2)}${"bytes".padStart(6)}  ${"until".padEnd(24)}  text`,
      );
      for (const l of s.lines) {
        out.line(
          `${`L${l.level}`.padEnd(6)}${`${l.id}+${l.n}`.padEnd(width + 2)}${String(l.bytes).padStart(6)}  ${l.until.padEnd(24)}  ${l.text.replace(/\s+/g, " ")}`,
        );
      }
      if (s.tail.length > 0)
        out.line(`tail: messages ${s.boundary}–${s.count - 1} (${s.tail.join(", ")})`);
      return 0;
    });
  },
};
