import type { Command } from "../command.ts";
import { INSPECT_USAGE, run } from "./run.ts";

/** `outline inspect`: runs until Ctrl-C, printing thread actors' transitions. */
export const inspect: Command = {
  name: "inspect",
  usage: INSPECT_USAGE,
  run: (argv) => run(argv),
};
