import { readFileSync } from "node:fs";
import type { StartControl } from "./run.ts";

/** Signals this close to the first are the same Ctrl-C, delivered more than once. */
export const SAME_SIGNAL_MS = 1_000;

/**
 * What the operator asks for: the first SIGINT or SIGTERM stops gracefully; one sent at least
 * SAME_SIGNAL_MS later kills. One Ctrl-C often arrives twice: the terminal signals the whole
 * foreground group (npm and us), and npm passes its copy on to us (tsx, which `npm start` used to
 * run through, did the same); both land within milliseconds.
 */
export function operatorSignals(
  source: Pick<NodeJS.Process, "on"> = process,
  now: () => number = Date.now,
): StartControl {
  let first: number | undefined;
  let stop!: (why: string) => void;
  let force!: (why: string) => void;
  const control: StartControl = {
    stop: new Promise((resolve) => (stop = resolve)),
    force: new Promise((resolve) => (force = resolve)),
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (first === undefined) {
      first = now();
      stop(signal);
    } else if (now() - first >= SAME_SIGNAL_MS) {
      force(signal);
    }
  };
  source.on("SIGINT", onSignal);
  source.on("SIGTERM", onSignal);
  return control;
}

/** A process's parent pid from /proc (Linux), or undefined when it is gone or unknown. */
export function parentOf(pid: number): number | undefined {
  try {
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** True when `pid` is a shell running a script (`sh -c …`), from /proc (Linux). */
export function isScriptShell(pid: number): boolean {
  try {
    const [argv0 = "", flag] = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return /(^|\/)(sh|dash|bash|zsh|ash)$/.test(argv0) && flag === "-c";
  } catch {
    return false;
  }
}

/**
 * The ancestors whose death means ours: the parent, and npm above the `sh -c` it runs us in.
 * `npm start` execs us (package.json), so npm is usually the parent itself: then its parent (a
 * terminal's shell, which may go while npm runs on) is not watched.
 */
export function lifeChain(
  ppid = process.ppid,
  underNpm = process.env.npm_lifecycle_event !== undefined,
  parent = parentOf,
  shell = isScriptShell,
): number[] {
  const grandparent = underNpm && shell(ppid) ? parent(ppid) : undefined;
  return grandparent !== undefined && grandparent > 1 ? [ppid, grandparent] : [ppid];
}

/**
 * Resolves when a process of our life chain is gone (`kill -9` of `npm start`'s npm): we, or the
 * shell between us, are then re-parented, which only a poll can tell.
 */
export function whenOrphaned(everyMs = 500): Promise<string> {
  const chain = lifeChain();
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      // Each link still has the parent it had: us → chain[0], chain[0] → chain[1].
      const parents = [process.ppid, ...chain.slice(0, -1).map((pid) => parentOf(pid))];
      const broken = chain.findIndex((pid, i) => parents[i] !== pid);
      if (broken < 0) return;
      clearInterval(timer);
      resolve(`the process that started us (PID ${chain[broken]}) is gone`);
    }, everyMs);
    timer.unref();
  });
}
