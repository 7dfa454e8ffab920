import type { Command } from "../command.ts";
import { REPLAY_USAGE } from "./args.ts";
import { run } from "./run.ts";

/** `outline replay`: its run prints its own help and errors, and returns the exit code. */
export const replay: Command = {
  name: "replay",
  usage: REPLAY_USAGE,
  run: (argv) => run(argv),
};
