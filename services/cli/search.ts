import { ApiError } from "../api/api-error.ts";
import { searchOffError } from "../prompt-builder/search-forward.ts";
import { parse, str } from "./args.ts";
import type { Command } from "./command.ts";
import { withSession } from "./session.ts";

const USAGE = `usage: outline search <thread> <text> [--before ID] [--limit N] [--json]

Finds the thread's original messages that contain <text> (plain text, any case), newest first,
through a running search service (npm start runs one when HISTORY_SEARCH=on). Each hit shows its id
(zoom(id, 1) reads it), the outline line that holds it (or 'whole' in the tail), and a snippet.

  --before ID   only messages before this id (the 'older hits' id a page ends with)
  --limit N     hits per page, 1 to 100 (default 20)
  --json        the API's JSON instead of text`;

export const search: Command = {
  name: "search",
  usage: USAGE,
  async run(argv, out) {
    const args = parse(
      argv,
      { before: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" } },
      2,
    );
    if (args.help) return out.help(USAGE);
    // parse() checked there are two.
    const [thread, q] = args.positionals as [string, string];
    return withSession(async ({ client, config }) => {
      const reply = await client
        .search({ thread, q, before: str(args.values.before), limit: str(args.values.limit) })
        .catch((err: unknown) => {
          // None answers, and this shell's settings say search is off: that is the likely cause.
          if (
            err instanceof ApiError &&
            err.code === "SEARCH_UNAVAILABLE" &&
            !config.settings.search
          )
            throw searchOffError();
          throw err;
        });
      if (args.values.json === true) {
        out.line(JSON.stringify(reply, null, 2));
        return 0;
      }
      if (reply.hits.length === 0) out.line("no messages match");
      for (const h of reply.hits) {
        out.line(
          `#${h.id} ${h.from} at ${h.at} (${h.in === null ? "whole" : `in ${h.in}`}) ${h.message}`,
        );
        out.line(`    ${h.snippet}`);
      }
      if (reply.before !== null) out.line(`older hits: --before ${reply.before}`);
      return 0;
    });
  },
};
