// Sequential HTTP timings for the benches that ask a server of their own (explorer, prompt).
import { request, type Agent } from "node:http";
import { performance } from "node:perf_hooks";

export const ms = (x: number): number => Number(x.toFixed(3));

/** The value at quantile q of ascending times. */
export function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** The median of numbers (of an even count, the mean of the middle two; NaN of none). */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[mid] as number;
  return ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

/** Runs fn `count` times one after another; its durations in ms, ascending. */
export async function timed(count: number, fn: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b);
}

/**
 * GET on 127.0.0.1; the body's chunks as they arrived (neither joined nor decoded: what any
 * client must do, and no more), or a rejection naming a status other than 200.
 */
export function getBytes(agent: Agent, port: number, path: string): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        res.statusCode === 200
          ? resolve(chunks)
          : reject(new Error(`GET ${path} answered ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

/** GET on 127.0.0.1; the body as text, or a rejection naming a status other than 200. */
export async function getText(agent: Agent, port: number, path: string): Promise<string> {
  return Buffer.concat(await getBytes(agent, port, path)).toString("utf8");
}
