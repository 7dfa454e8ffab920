import { nodeId, nodeSize } from "./names.ts";
import { heldBack, type ThreadState } from "./thread.ts";
import { threadSettingsOf, type ThreadSettings } from "./settings.ts";

/** One outline line as published (SPEC §8). `bytes` is what it adds to the outline. */
export interface SnapshotLine {
  id: number;
  n: number;
  level: number;
  text: string;
  bytes: number;
  until: string;
}

/** The outline snapshot published to KV (SPEC §8). Fields may be added, none renamed. */
export interface OutlineSnapshot {
  thread: string;
  count: number;
  boundary: number;
  since: string | null;
  cutAt: string | null;
  complete: boolean;
  bytes: number;
  /** Stream sequence of the newest event it reflects. */
  seq: number;
  lines: SnapshotLine[];
  /** Ids of the messages still whole, oldest first. */
  tail: string[];
  /** Their stream sequences, so a reader fetches each in one read. */
  tailSeqs: number[];
  /**
   * Summaries outstanding and cuts waiting for them: the outline may lag the log. `held`: due
   * nodes waiting for their summarizer group to fill (HISTORY_GROUP), not counted in `jobs`.
   */
  pending: { jobs: number; cuts: number; merging: boolean; held?: number };
  /** The line, tail and outline settings the thread runs under (absent in older snapshots). */
  settings?: ThreadSettings;
}

export function toSnapshot(state: ThreadState): OutlineSnapshot {
  return {
    thread: state.thread,
    count: state.count,
    boundary: state.boundary,
    since: state.since,
    cutAt: state.cutAt,
    complete: state.complete,
    bytes: state.outlineBytes,
    seq: state.seq,
    lines: state.outline.map((line) => ({
      id: nodeId(line),
      n: nodeSize(line),
      level: line.level,
      text: line.text,
      bytes: line.bytes,
      until: line.until,
    })),
    tail: state.tail.map((entry) => entry.message.id),
    tailSeqs: state.tail.map((entry) => entry.seq),
    pending: {
      jobs: state.wanted.length - heldBack(state) + state.inflight.length,
      cuts: state.cuts.length,
      merging: state.batch !== null,
      held: heldBack(state),
    },
    settings: threadSettingsOf(state.settings),
  };
}
