import type { Command } from "./command.ts";
import { inspect } from "./inspect/command.ts";
import { outline } from "./outline.ts";
import { prompt } from "./prompt.ts";
import { replay } from "./replay/command.ts";
import { search } from "./search.ts";
import { send } from "./send.ts";
import { zoom } from "./zoom.ts";

/**
 * Every `outline <command>`, in the order `outline --help` lists them. A new command is one
 * entry here: `replay` and `inspect` plug in the same way (their run takes argv, returns the
 * exit code).
 */
export const COMMANDS: readonly Command[] = [send, prompt, outline, zoom, search, replay, inspect];
