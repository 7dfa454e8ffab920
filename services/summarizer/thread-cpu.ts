import { readFileSync } from "node:fs";

/** /proc reports CPU in USER_HZ ticks, 100 a second on Linux whatever the kernel's own rate. */
const MS_PER_TICK = 10;

/**
 * CPU milliseconds the calling thread has used (Linux: /proc/thread-self/stat, 10 ms ticks, so
 * exact only summed over many calls); undefined where that file cannot be read.
 */
export function threadCpuMs(): number | undefined {
  try {
    const stat = readFileSync("/proc/thread-self/stat", "utf8");
    // Fields after the command name (which may hold spaces, so split after its ")"): utime is
    // the 14th field of the line, stime the 15th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * MS_PER_TICK : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A thread's CPU read at most every `everyMs` (the first time always): a read of /proc is four
 * system calls, and two per batch cost a summarizer thread about as much as the small batches a
 * busy worker hands it (bench e2e heavy). What was used since the last read is reported by the
 * next call that reads; `late` says a read is owed (call `since` again once the thread idles).
 */
export class ThrottledCpu {
  readonly #read: () => number | undefined;
  readonly #everyMs: number;
  #total: number | undefined;
  #readAt = Number.NEGATIVE_INFINITY;
  /** A call came too soon to read: what it used is not reported yet. */
  late = false;

  /** `read`: the thread's CPU ms so far (threadCpuMs); read once now, as the start. */
  constructor(read: () => number | undefined = threadCpuMs, everyMs = 100) {
    this.#read = read;
    this.#everyMs = everyMs;
    this.#total = read();
  }

  /** The thread's CPU cannot be read here. */
  get unreadable(): boolean {
    return this.#total === undefined;
  }

  /** CPU ms used since the last read, read now if one is due (else 0, and `late` is set). */
  since(now: number, force = false): number {
    if (!force && now - this.#readAt < this.#everyMs) {
      this.late = true;
      return 0;
    }
    this.late = false;
    const total = this.#read();
    const used = total === undefined || this.#total === undefined ? 0 : total - this.#total;
    this.#total = total;
    this.#readAt = now;
    return used;
  }
}
