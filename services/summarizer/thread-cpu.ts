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
