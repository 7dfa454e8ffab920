import type { Command } from "./command.ts";

/** A command as `outline --help` lists it; its module is loaded only when it runs. */
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

/**
 * Every `outline <command>`, in the order `outline --help` lists them. A new command is one
 * entry here. Each is imported when it is run, so `outline --help` or a one-shot command loads
 * only its own modules (NATS, zod and xstate cost most of a start).
 */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "send",
    summary: "publish a message to a thread (lines from stdin without a text)",
    load: async () => (await import("./send.ts")).send,
  },
  {
    name: "prompt",
    summary: "print the prompt an agent would get",
    load: async () => (await import("./prompt.ts")).prompt,
  },
  {
    name: "outline",
    summary: "print a thread's outline lines with levels and sizes",
    load: async () => (await import("./outline.ts")).outline,
  },
  {
    name: "zoom",
    summary: "open an outline line, or read a message whole",
    load: async () => (await import("./zoom.ts")).zoom,
  },
  {
    name: "search",
    summary: "find the messages of a thread that contain a text",
    load: async () => (await import("./search.ts")).search,
  },
  {
    name: "import",
    summary: "publish a JSONL file of message.created bodies (idempotent)",
    load: async () => (await import("./import.ts")).importCommand,
  },
  {
    name: "dead",
    summary: "list the dead letters: events not applied, with reason, time and bytes",
    load: async () => (await import("./dead.ts")).dead,
  },
  {
    name: "replay",
    summary: "rebuild outlines from CHAT + HISTORY (--verify, --into BUCKET)",
    load: async () => (await import("./replay/command.ts")).replay,
  },
  {
    name: "cluster",
    summary: "print which instance owns which partitions (GET /cluster)",
    load: async () => (await import("./cluster.ts")).cluster,
  },
  {
    name: "inspect",
    summary: "print thread actors' transitions live (worker started with --inspect)",
    load: async () => (await import("./inspect/command.ts")).inspect,
  },
];
