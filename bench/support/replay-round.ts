// What the replay bench's child (replay-rounds.ts) reports per round, one line each.

/** What one side of a round took: wall time, CPU here and in nats-server (ms), events read. */
export interface SideMeasure {
  ms: number;
  cpuMs: number;
  serverCpuMs: number;
}

export interface RoundMeasure {
  raw: SideMeasure & { read: number };
  replay: SideMeasure & { calls: number };
}

/** The start of a round's line; JSON follows. */
export const ROUND_LINE = "ROUND ";
