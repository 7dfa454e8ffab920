import type { Command } from "./command.ts";

/** A command as `outline --help` lists it; its module is loaded only when it runs. */
export interface CommandEntry {
  name: string;
  summary: string;
  /**
   * Which users of nats/nats-server.conf may run it, as a refusal says (docs/infrastructure.md,
   * "Which user runs which command" has the table; keep the two alike).
   */
  users: string;
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
    users: "platform",
    load: async () => (await import("./send.ts")).send,
  },
  {
    name: "prompt",
    summary: "print the prompt an agent would get",
    users: "platform (it asks the running prompt-builder)",
    load: async () => (await import("./prompt.ts")).prompt,
  },
  {
    name: "outline",
    summary: "print a thread's outline lines with levels and sizes",
    users: "any of them (platform through a running prompt-builder where it may not read)",
    load: async () => (await import("./outline.ts")).outline,
  },
  {
    name: "zoom",
    summary: "open an outline line, or read a message whole",
    users: "prompt-builder or thread-worker; platform through a running prompt-builder",
    load: async () => (await import("./zoom.ts")).zoom,
  },
  {
    name: "search",
    summary: "find the messages of a thread that contain a text",
    users: "platform or prompt-builder (it asks the running search service)",
    load: async () => (await import("./search.ts")).search,
  },
  {
    name: "mcp",
    summary: "serve a thread's tools and prompt over MCP on stdio",
    users: "platform (it asks the running prompt-builder and search service)",
    load: async () => (await import("./mcp.ts")).mcp,
  },
  {
    name: "import",
    summary: "publish a JSONL file of message.created bodies (idempotent)",
    users: "platform",
    load: async () => (await import("./import.ts")).importCommand,
  },
  {
    name: "dead",
    summary: "list the dead letters: events not applied, with reason, time and bytes",
    users: "thread-worker",
    load: async () => (await import("./dead.ts")).dead,
  },
  {
    name: "replay",
    summary: "rebuild outlines from CHAT + HISTORY (--verify, --into BUCKET)",
    users: "thread-worker (--into BUCKET: a user that may create and write that bucket)",
    load: async () => (await import("./replay/command.ts")).replay,
  },
  {
    name: "cluster",
    summary: "print which instance owns which partitions (GET /cluster)",
    users: "prompt-builder or thread-worker; platform through a running prompt-builder",
    load: async () => (await import("./cluster.ts")).cluster,
  },
  {
    name: "inspect",
    summary: "print thread actors' transitions live (worker started with --inspect)",
    users: "none needed (it listens for the worker's --inspect connection, not on NATS)",
    load: async () => (await import("./inspect/command.ts")).inspect,
  },
];
