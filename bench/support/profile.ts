// BENCH_PROFILE=<file.cpuprofile>: a CPU profile of the measured part only (not of the set-up),
// for finding the hot path behind a figure. Open it in Chrome DevTools or speedscope.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

export async function profiled<T>(fn: () => Promise<T>): Promise<T> {
  const file = process.env.BENCH_PROFILE;
  if (!file) return fn();
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  try {
    return await fn();
  } finally {
    const { profile } = await session.post("Profiler.stop");
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
    console.log(`  CPU profile written to ${file}`);
  }
}
