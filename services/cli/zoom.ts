import { parse, str } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline zoom <thread> <id> <n> [--offset N] [--limit N] [--json]

zoom(id, n) opens outline line id+n into the two lines it was made from; zoom(id, 1) prints
message id whole (a text over 25,000 characters comes in pages: --offset, --limit).
n is a power of two and id a multiple of n.

  --offset N   first character of the page (n=1 only)
  --limit N    characters in the page, at most 25000 (n=1 only)
  --json       the API's JSON instead of text`;

export const zoom: Command = {
  name: "zoom",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(
      argv,
      { offset: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" } },
      3,
    );
    if (args.help) return out.help(USAGE);
    // parse() checked there are three.
    const [thread, id, n] = args.positionals as [string, string, string];
    return withSession(async ({ operations }) => {
      const reply = await operations.zoom({
        thread,
        id,
        n,
        offset: str(args.values.offset),
        limit: str(args.values.limit),
      });
      if (args.values.json === true) {
        out.line(JSON.stringify(reply, null, 2));
        return 0;
      }
      if ("lines" in reply) {
        for (const l of reply.lines) out.line(`${l.id}+${l.n}|${l.text}    (until ${l.until})`);
        return 0;
      }
      const m = reply.message;
      out.line(
        `#${m.position} ${m.id} ${m.from}${m.to ? ` → ${m.to}` : ""} (${m.role}) at ${m.at}`,
      );
      out.line(m.text);
      if (reply.note) out.line(reply.note);
      return 0;
    });
  },
};
