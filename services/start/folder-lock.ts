import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Who runs `npm start` in a folder, written to `.data/start.lock` while it does. Only a start
 * with its own nats-server takes it (two would share one JetStream store); starts with NATS_URL
 * set may run side by side (SPEC §9).
 */
export interface LockHolder {
  pid: number;
  since: string;
  /** nats-server's pid (through its lifeline): it may outlive a killed start by a few seconds. */
  natsPid?: number;
  nats?: string;
  http?: string;
}

/** Another start holds the folder: the message names it and what to do. */
export class FolderBusyError extends Error {
  override readonly name = "FolderBusyError";
  readonly holder: LockHolder;
  constructor(dataDir: string, holder: LockHolder) {
    const running = isAlive(holder.pid);
    const where = [
      holder.nats && `NATS ${holder.nats}`,
      holder.http && `HTTP ${holder.http}`,
      `since ${holder.since}`,
    ].filter(Boolean);
    super(
      running
        ? `another 'npm start' is running in this folder: PID ${holder.pid} (${where.join(", ")}). ` +
            `Use it (npx outline finds its server through ${join(dataDir, "nats.url")}), stop it ` +
            `(Ctrl-C in its terminal, or kill ${holder.pid}), or set NATS_URL to run services against a server of your own.`
        : `the last 'npm start' here (PID ${holder.pid}) was killed and its nats-server (PID ${holder.natsPid}) ` +
            `is still stopping; try again in a few seconds`,
    );
    this.holder = holder;
  }
}

const LOCK_FILE = "start.lock";

export function isAlive(pid: number | undefined): boolean {
  if (pid === undefined || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  // A pid from before a reboot may now be someone else's: ours are node or nats-server.
  const cmdline = `/proc/${pid}/cmdline`;
  if (!existsSync("/proc/self/cmdline")) return true;
  try {
    return /node|nats/.test(readFileSync(cmdline, "utf8"));
  } catch {
    return false;
  }
}

function read(file: string): LockHolder | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as LockHolder;
  } catch {
    return undefined;
  }
}

export interface FolderLock {
  /** Adds what the second start's message shows (ports) once they are known. */
  update(fields: Partial<Omit<LockHolder, "pid" | "since">>): void;
  /** Removes the file if it is still ours. */
  release(): void;
}

/**
 * Takes `<dataDir>/start.lock`, or throws FolderBusyError naming the start that holds it. A
 * lock whose start and nats-server are both gone (a kill -9, a reboot) is taken over.
 */
export function acquireFolderLock(dataDir: string, pid = process.pid): FolderLock {
  const file = join(dataDir, LOCK_FILE);
  let holder: LockHolder = { pid, since: new Date().toISOString() };
  const write = (flag: "wx" | "w") => writeFileSync(file, `${JSON.stringify(holder)}\n`, { flag });
  for (let attempt = 0; ; attempt++) {
    try {
      write("wx");
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 3) throw err;
    }
    const current = read(file);
    // A file still being written (it is tiny) reads as undefined: look again.
    if (current === undefined) continue;
    if (isAlive(current.pid) || isAlive(current.natsPid))
      throw new FolderBusyError(dataDir, current);
    // Stale. Moved aside first, so two starts racing for it cannot both take it.
    const aside = `${file}.stale-${pid}`;
    try {
      renameSync(file, aside);
    } catch {
      continue;
    }
    const moved = read(aside);
    if (moved !== undefined && moved.pid !== current.pid) {
      // Another start took it over between our read and the move: it is theirs.
      renameSync(aside, file);
      throw new FolderBusyError(dataDir, moved);
    }
    rmSync(aside, { force: true });
  }
  return {
    update(fields) {
      holder = { ...holder, ...fields };
      if (read(file)?.pid === pid) write("w");
    },
    release() {
      if (read(file)?.pid === pid) rmSync(file, { force: true });
    },
  };
}
