import { SettingsError } from "../../shared/errors.ts";
import { ApiError } from "../api/api-error.ts";
import { UsageError } from "./args.ts";
import type { Output } from "./command.ts";
import { COMMANDS } from "./commands.ts";
import { PermissionDenied } from "./permissions.ts";

// Exit codes: 0 done, 1 the command failed (not found, NATS down, …), 2 the command line was wrong.
const FAILED = 1;
const USAGE_ERROR = 2;

const usage = () =>
  [
    "usage: outline <command> [arguments] [--config FILE]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(10)}${c.summary}`),
    "",
    "Each command takes --help. Settings come from the environment and the config file, as for",
    "the services; NATS_URL says where NATS is (unset: the server of an 'npm start' running in",
    "this folder or one above, else nats://127.0.0.1:4222).",
  ].join("\n");

/**
 * Too many arguments for a command whose last one is a text (`<text>` in its usage): most likely
 * a text with spaces, unquoted. Shows it quoted.
 */
function quoteHint(err: UsageError, usage: string): string {
  if (!err.tooMany || !usage.split("\n", 1)[0]?.includes("<text>")) return "";
  const { positionals, max } = err.tooMany;
  return ` (quote a text with spaces: "${positionals.slice(max - 1).join(" ")}")`;
}

const out: Output = {
  line: (text) => process.stdout.write(`${text}\n`),
  help(text) {
    process.stdout.write(`${text}\n`);
    return 0;
  },
};

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const target = COMMANDS.find((c) => c.name === rest[0]);
    process.stdout.write(`${target ? (await target.load()).usage : usage()}\n`);
    return name === undefined ? USAGE_ERROR : 0;
  }
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry) {
    process.stderr.write(`outline: unknown command '${name}'\n\n${usage()}\n`);
    return USAGE_ERROR;
  }
  const command = await entry.load();
  try {
    return await command.run(rest, out);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `outline ${command.name}: ${err.message}${quoteHint(err, command.usage)}\n${err.usage ? `\n${command.usage}\n` : ""}`,
      );
      return USAGE_ERROR;
    }
    if (err instanceof ApiError) {
      process.stderr.write(`outline ${command.name}: ${err.message} [${err.code}]\n`);
      return err.status === 400 ? USAGE_ERROR : FAILED;
    }
    if (err instanceof PermissionDenied) {
      process.stderr.write(
        `outline ${command.name}: ${err.message}: run it as a user that may; with nats/nats-server.conf: ${entry.users} (docs/infrastructure.md, "Which user runs which command")\n`,
      );
      return FAILED;
    }
    if (err instanceof SettingsError) {
      process.stderr.write(`outline: ${err.message}\n`);
      return FAILED;
    }
    process.stderr.write(`outline ${command.name}: ${(err as Error).message}\n`);
    return FAILED;
  }
}

// `outline outline T | head`: the reader has gone, which is no error of ours. Exit at once and
// quietly, as other command-line tools do, instead of a stack trace for every later write.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

process.exitCode = await main(process.argv.slice(2));
