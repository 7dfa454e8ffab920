// What the replay bench's child (replay-rounds.ts) reports per round, one line each.

/** What one side of a round took: wall time, CPU here and in nats-server (ms), events read. */
export interface SideMeasure {
  ms: number;
  cpuMs: number;
  serverCpuMs: number;
}

export interface RoundMeasure {
  /** The replay's own ordered read with a no-op callback (the baseline). */
  raw: SideMeasure & { read: number };
  /** nats.js's ordered consumer, reading the same. */
  natsjs: SideMeasure & { read: number };
  /** `outline replay --all --into BUCKET`: the replay writing every snapshot. */
  into: SideMeasure;
  replay: SideMeasure & { calls: number };
}

/** The start of a round's line; JSON follows. */
export const ROUND_LINE = "ROUND ";
