import { parseArgs, type ParseArgsConfig } from "node:util";

/**
 * The command line was wrong (exit code 2): the message says what, and the command's usage
 * follows it unless `usage` is false (a file that cannot be read: the usage would not help).
 */
export class UsageError extends Error {
  override readonly name = "UsageError";
  readonly usage: boolean;
  /**
   * Set when there were more arguments than the command takes: what they were, and how many it
   * takes, so a command whose last argument is a text can show it quoted.
   */
  readonly tooMany: { positionals: string[]; max: number } | undefined;
  constructor(
    message: string,
    options: { usage?: boolean; tooMany?: { positionals: string[]; max: number } } = {},
  ) {
    super(message);
    this.usage = options.usage ?? true;
    this.tooMany = options.tooMany;
  }
}

export type Options = NonNullable<ParseArgsConfig["options"]>;

export interface Parsed {
  positionals: string[];
  values: Record<string, string | boolean | undefined>;
  help: boolean;
}

/** Edit distance, for "did you mean": small strings only. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return row[b.length] as number;
}

/** "unknown option --frm; did you mean --from?", else the options there are. */
export function unknownOption(
  raw: string,
  names: readonly string[],
  takesArguments: boolean,
): string {
  const given = raw.replace(/^-+/, "");
  const near = names
    .map((name) => ({ name, d: distance(given, name) }))
    .filter(({ name, d }) => d <= Math.min(2, name.length - 1) || name.startsWith(given))
    .sort((x, y) => x.d - y.d)[0];
  if (near) return `unknown option ${raw}; did you mean --${near.name}?`;
  const all = names.map((name) => `--${name}`).join(", ");
  return `unknown option ${raw}; the options are ${all}${takesArguments ? ` (an argument that starts with '-' goes after '--': -- ${raw})` : ""}`;
}

// A negative number is an argument (its command says which values it takes), never an option:
// no option is a digit.
const NEGATIVE = /^-\d/;

/**
 * Parses one command's arguments strictly (an unknown option is an error, not ignored), with
 * `--help`/`-h` and `--config FILE` (read by loadSettings) accepted everywhere. Each error says
 * what is wrong and what to type instead (node:util's messages name neither the fix nor a near
 * option, and call a negative number an unknown option).
 */
export function parse(
  argv: readonly string[],
  options: Options,
  positionals: number | { min: number; max: number },
): Parsed {
  const { min, max } =
    typeof positionals === "number" ? { min: positionals, max: positionals } : positionals;
  const all: Options = {
    ...options,
    help: { type: "boolean", short: "h" },
    config: { type: "string" },
  };
  // Not strict: every token comes back and is checked below, where the errors can be ours.
  const { tokens } = parseArgs({
    args: [...argv],
    options: all,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const values: Record<string, string | boolean | undefined> = {};
  const found: string[] = [];
  let lastNegative = -1;
  for (const token of tokens) {
    if (token.kind === "positional") found.push(token.value);
    if (token.kind !== "option") continue;
    const raw = argv[token.index] as string;
    const spec = Object.hasOwn(all, token.name) ? all[token.name] : undefined;
    if (spec === undefined) {
      // "-12" comes back as options -1 and -2 of the same index: one argument.
      if (NEGATIVE.test(raw)) {
        if (token.index !== lastNegative) found.push(raw);
        lastNegative = token.index;
        continue;
      }
      throw new UsageError(unknownOption(token.rawName, Object.keys(all), max > 0));
    }
    if (spec.type === "boolean") {
      if (token.value !== undefined)
        throw new UsageError(`${token.rawName} takes no value; write ${token.rawName} alone`);
      values[token.name] = true;
      continue;
    }
    // "--limit --json" would take "--json" as the limit: an option, so the value is missing.
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--")))
      throw new UsageError(
        `${token.rawName} needs a value: ${token.rawName} VALUE (${token.rawName}=VALUE for one that starts with '--')`,
      );
    values[token.name] = token.value;
  }
  const help = values.help === true;
  const got = found.length;
  if (!help && (got < min || got > max)) {
    const expected =
      max === 0
        ? "no arguments"
        : `${min === max ? String(min) : `${min} to ${max}`} argument${max === 1 ? "" : "s"}`;
    const extra = found.slice(max).map((a) => `'${a}'`);
    throw new UsageError(
      got > max
        ? `takes ${expected}, got ${got}: ${extra.join(" ")} ${extra.length === 1 ? "is one" : `are ${extra.length}`} too many`
        : `takes ${expected}, got ${got}`,
      got > max ? { tooMany: { positionals: found, max } } : {},
    );
  }
  return { positionals: found, values, help };
}

export const str = (value: string | boolean | undefined): string | undefined =>
  typeof value === "string" ? value : undefined;
