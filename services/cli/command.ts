/** Where a command writes: results to stdout, help and diagnostics to stderr. */
export interface Output {
  line(text: string): void;
  /** Prints a usage text and returns the exit code for `--help` (0). */
  help(usage: string): number;
}

/**
 * One `outline <name>` command. `run` gets the arguments after the name and returns the exit
 * code; a UsageError it throws is printed with `usage`.
 */
export interface Command {
  name: string;
  usage: string;
  run(argv: readonly string[], out: Output): Promise<number>;
}
