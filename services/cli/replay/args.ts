import { isValidName } from "../../config/names.ts";
import { threadArg } from "../../api/requests.ts";
import { unknownOption, UsageError } from "../args.ts";

/** What `outline replay` was asked to do. */
export interface ReplayArgs {
  /** One thread, or undefined with `all`. */
  thread: string | undefined;
  all: boolean;
  verify: boolean;
  /** Write the rebuilt snapshots into this bucket instead of only comparing. */
  into: string | undefined;
  resummarize: boolean;
  /** Also ask every running search service to rebuild its index from CHAT. */
  search: boolean;
  help: boolean;
  /** Passed through to loadSettings (it reads `--config` itself). */
  config: string | undefined;
}

export const REPLAY_USAGE = `usage: outline replay (--thread T | --all) [--verify] [--into BUCKET] [--resummarize] [--search] [--config FILE]

Rebuilds outlines from the CHAT and HISTORY streams with zero model calls. Each thread is
rebuilt under the settings its log records (history.<thread>.settings.<seq>: the worker writes
them from the thread's first message and after each change), whatever this replay's are;
HISTORY_LINE, HISTORY_TAIL and HISTORY_OUTLINE (environment or config file) apply only to a
thread, or its first messages, that recorded none. Streams, buckets and the server come from
OUTLINE_*, NATS_URL or the config file, as for the worker.

  --thread T       rebuild one thread
  --all            rebuild every thread in CHAT
  --verify         compare each rebuilt snapshot with the one stored in the KV bucket, print each
                   difference; exit code 1 when any thread differs
  --into BUCKET    write the rebuilt snapshots into BUCKET (created if needed); the live bucket
                   is left untouched
  --resummarize    when a node is missing from HISTORY, build it with the configured summarizer
                   (HISTORY_SUMMARIZER) and publish it, instead of stopping with an error
  --search         with --all: also have every running search service rebuild its index from
                   CHAT (docs/search.md); each reports when done

exit codes: 0 rebuilt (and all matched), 1 a snapshot differs, 2 an error stopped the replay or a
search index was not rebuilt`;

function value(argv: readonly string[], i: number, flag: string, example: string): string {
  const next = argv[i + 1];
  if (next === undefined || next.startsWith("--")) {
    throw new UsageError(`${flag} needs a value, e.g. ${flag} ${example}`);
  }
  return next;
}

const OPTIONS = ["thread", "all", "verify", "into", "resummarize", "search", "config", "help"];

export function parseReplayArgs(argv: readonly string[]): ReplayArgs {
  const args: ReplayArgs = {
    thread: undefined,
    all: false,
    verify: false,
    into: undefined,
    resummarize: false,
    search: false,
    help: false,
    config: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? arg.split(/=(.*)/s) : [arg];
    const take = (example: string): string => {
      if (inline !== undefined) return inline;
      const v = value(argv, i, flag as string, example);
      i += 1;
      return v;
    };
    switch (flag) {
      case "--thread":
        args.thread = take("support-42");
        // Said now, as by 'outline dead --thread': a bad id would fail deep in the replay.
        try {
          threadArg({ thread: args.thread });
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        break;
      case "--all":
        args.all = true;
        break;
      case "--verify":
        args.verify = true;
        break;
      case "--into":
        args.into = take("outline-rebuilt");
        // Said now: a bad name would otherwise fail only after the whole rebuild.
        if (!isValidName(args.into))
          throw new UsageError(
            `--into '${args.into}' is not a bucket name; use 1–64 characters of A-Z, a-z, 0-9, '_' or '-', e.g. --into outline-rebuilt`,
          );
        break;
      case "--resummarize":
        args.resummarize = true;
        break;
      case "--search":
        args.search = true;
        break;
      case "--config":
        args.config = take("outline.config.json");
        break;
      case "--help":
      case "-h":
        args.help = true;
        break;
      default:
        throw new UsageError(
          arg.startsWith("-")
            ? unknownOption(flag as string, OPTIONS, false)
            : `unknown argument '${arg}': outline replay takes options only (a thread is --thread ${arg})`,
        );
    }
  }
  if (args.help) return args;
  if (args.all === (args.thread !== undefined)) {
    throw new UsageError(
      "say which threads to rebuild: --thread T for one, or --all for every thread (not both)",
    );
  }
  if (args.search && !args.all) {
    throw new UsageError("--search rebuilds whole search indexes: use it with --all");
  }
  return args;
}
