import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parse, UsageError, type Options } from "../services/cli/args.ts";
import { parseReplayArgs } from "../services/cli/replay/args.ts";

// The options of `outline send`, `outline dead` and `outline cluster`.
const SEND: Options = {
  from: { type: "string" },
  to: { type: "string" },
  role: { type: "string" },
  id: { type: "string" },
};
const DEAD: Options = {
  thread: { type: "string" },
  json: { type: "boolean" },
  limit: { type: "string" },
};
const CLUSTER: Options = { json: { type: "boolean" } };

const refusal = (fn: () => unknown): UsageError => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error("expected a UsageError");
};

describe("the CLI's command lines", () => {
  it("an unknown option near a known one: did you mean it", () => {
    const err = refusal(() => parse(["demo", "hi", "--frm", "Ana"], SEND, { min: 1, max: 2 }));
    expect(err.message).toBe("unknown option --frm; did you mean --from?");
    expect(refusal(() => parse(["--lmit", "3"], DEAD, 0)).message).toBe(
      "unknown option --lmit; did you mean --limit?",
    );
    expect(refusal(() => parse(["-j"], DEAD, 0)).message).toBe(
      "unknown option -j; did you mean --json?",
    );
  });

  it("an unknown option near none: the options there are, and how to pass a '-' argument", () => {
    expect(refusal(() => parse(["demo", "--xyz"], SEND, { min: 1, max: 2 })).message).toBe(
      "unknown option --xyz; the options are --from, --to, --role, --id, --help, --config (an argument that starts with '-' goes after '--': -- --xyz)",
    );
    expect(parse(["demo", "--", "--xyz"], SEND, { min: 1, max: 2 }).positionals).toEqual([
      "demo",
      "--xyz",
    ]);
  });

  it("a negative number is an argument, for its command to judge, not an unknown option", () => {
    const zoom: Options = { offset: { type: "string" }, limit: { type: "string" } };
    expect(parse(["demo", "-1", "1"], zoom, 3).positionals).toEqual(["demo", "-1", "1"]);
    expect(parse(["demo", "-12", "-1.5", "--limit", "4"], zoom, 3)).toEqual({
      positionals: ["demo", "-12", "-1.5"],
      values: { limit: "4" },
      help: false,
    });
  });

  it("an option's value may be negative (the command refuses it with its rule)", () => {
    expect(parse(["--limit", "-3"], DEAD, 0).values).toEqual({ limit: "-3" });
    expect(parse(["--limit=-3", "--json"], DEAD, 0).values).toEqual({ limit: "-3", json: true });
  });

  it("a missing value, and a value given to a switch, say what to write", () => {
    for (const argv of [["--limit"], ["--limit", "--json"]]) {
      expect(refusal(() => parse(argv, DEAD, 0)).message).toBe(
        "--limit needs a value: --limit VALUE (--limit=VALUE for one that starts with '--')",
      );
    }
    expect(parse(["--limit=--json"], DEAD, 0).values).toEqual({ limit: "--json" });
    expect(refusal(() => parse(["--json=yes"], DEAD, 0)).message).toBe(
      "--json takes no value; write --json alone",
    );
  });

  it("too many or too few arguments: how many it takes and which are extra", () => {
    const none = refusal(() => parse(["extra"], CLUSTER, 0));
    expect(none.message).toBe("takes no arguments, got 1: 'extra' is one too many");
    expect(none.tooMany).toEqual({ positionals: ["extra"], max: 0 });
    expect(refusal(() => parse(["demo", "a", "b"], CLUSTER, 1)).message).toBe(
      "takes 1 argument, got 3: 'a' 'b' are 2 too many",
    );
    const few = refusal(() => parse([], SEND, { min: 1, max: 2 }));
    expect(few.message).toBe("takes 1 to 2 arguments, got 0");
    expect(few.tooMany).toBeUndefined();
    // --help wins over a count that is wrong.
    expect(parse(["--help"], SEND, { min: 1, max: 2 }).help).toBe(true);
  });

  it("any command line either parses or is a UsageError, never another exception", () => {
    const word = fc.oneof(
      fc.constantFrom("--from", "--json", "--limit", "-h", "--", "-1", "--from=", "-"),
      fc.string({ maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(word, { maxLength: 8 }), (argv) => {
        let parsed;
        try {
          parsed = parse(argv, { ...SEND, ...DEAD }, { min: 0, max: 3 });
        } catch (err) {
          return err instanceof UsageError;
        }
        // --help asks for the usage: the count is not checked then.
        return parsed.help || parsed.positionals.length <= 3;
      }),
    );
  });

  it("outline replay names the option meant, and where a thread goes", () => {
    expect(() => parseReplayArgs(["--al"])).toThrow("unknown option --al; did you mean --all?");
    expect(() => parseReplayArgs(["support-42"])).toThrow(
      "unknown argument 'support-42': outline replay takes options only (a thread is --thread support-42)",
    );
  });
});
