import { parseArgs, type ParseArgsConfig } from "node:util";

/**
 * The command line was wrong (exit code 2): the message says what, and the command's usage
 * follows it unless `usage` is false (a file that cannot be read: the usage would not help).
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly usage: boolean;
  constructor(message: string, options: { usage?: boolean } = {}) {
    super(message);
    this.usage = options.usage ?? true;
  }
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
export function parse(
  argv: readonly string[],
  options: Options,
  positionals: number | { min: number; max: number },
): Parsed {
  const { min, max } =
    typeof positionals === "number" ? { min: positionals, max: positionals } : positionals;
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
  const got = parsed.positionals.length;
  if (!help && (got < min || got > max)) {
    const expected = min === max ? String(min) : `${min} to ${max}`;
    throw new UsageError(
      `expected ${expected} argument${max === 1 ? "" : "s"}, got ${got}${got > max ? ` (quote a text with spaces: "…")` : ""}`,
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
