import { parseArgs, type ParseArgsConfig } from "node:util";

/** The command line was wrong: the message says what, and the command's usage follows it. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Parsed {
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
  help: boolean;
}

/**
 * Parses one command's arguments strictly (an unknown option is an error, not ignored), with
 * `--help`/`-h` and `--config FILE` (read by loadSettings) accepted everywhere.
 */
export function parse(argv: readonly string[], options: Options, positionals: number): Parsed {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        ...options,
        help: { type: "boolean", short: "h" },
        config: { type: "string" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const help = parsed.values.help === true;
  if (!help && parsed.positionals.length !== positionals) {
    throw new UsageError(
      `expected ${positionals} argument${positionals === 1 ? "" : "s"}, got ${parsed.positionals.length}${parsed.positionals.length > positionals ? ` (quote a text with spaces: "…")` : ""}`,
    );
  }
  return {
    positionals: parsed.positionals,
    values: parsed.values,
    help,
  };
}

export const str = (value: string | boolean | undefined): string | undefined =>
  typeof value === "string" ? value : undefined;
