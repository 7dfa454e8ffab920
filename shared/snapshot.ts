import type { Line } from "./batch.ts";
import { nodeId, nodeSize } from "./names.ts";
import { heldBack, type ThreadState } from "./thread.ts";
import { threadSettingsOf } from "./settings.ts";
import type { OutlineSnapshot, SnapshotLine } from "./api.ts";

/** One outline line, and the outline snapshot published to KV (SPEC §8), as the API answers. */
export type { OutlineSnapshot, SnapshotLine };

/**
 * The snapshot of `state`. `seq`, when given, is the newest of the thread's events handled,
 * applied or not (the state's own `seq` counts only applied ones): events passed over after its
 * last message are then no longer newer than the snapshot.
 */
export function toSnapshot(state: ThreadState, seq?: number): OutlineSnapshot {
  return {
    ...snapshotHead(state, seq),
    lines: state.outline.map(snapshotLine),
    ...snapshotRest(state),
  };
}

/** The fields before `lines`, in their order (toSnapshot and encodeSnapshot share them). */
function snapshotHead(state: ThreadState, seq = state.seq) {
  return {
    thread: state.thread,
    count: state.count,
    boundary: state.boundary,
    // SPEC §2: `at` of the first message still whole; before the first cut, message 0's.
    since: state.since ?? state.tail[0]?.message.at ?? null,
    cutAt: state.cutAt,
    complete: state.complete,
    bytes: state.outlineBytes,
    seq: Math.max(seq, state.seq),
  };
}

function snapshotLine(line: Line): SnapshotLine {
  return {
    id: nodeId(line),
    n: nodeSize(line),
    level: line.level,
    text: line.text,
    bytes: line.bytes,
    until: line.until,
  };
}

/** The fields after `lines`, in their order. */
function snapshotRest(state: ThreadState) {
  return {
    tail: state.tail.map((entry) => entry.message.id),
    tailSeqs: state.tail.map((entry) => entry.seq),
    pending: pendingOf(state),
    settings: threadSettingsOf(state.settings),
  };
}

/** What a snapshot's `pending` says of `state`. */
export function pendingOf(state: ThreadState): OutlineSnapshot["pending"] {
  const held = heldBack(state);
  return {
    jobs: state.wanted.length - held + state.inflight.length,
    cuts: state.cuts.length,
    merging: state.batch !== null,
    held,
  };
}

const encoder = new TextEncoder();
/** Each line's JSON, encoded once: lines are immutable and most stay from one snapshot to the next. */
const encodedLines = new WeakMap<Line, Uint8Array>();
const COMMA = 0x2c;

/**
 * `JSON.stringify(toSnapshot(state, seq))` as UTF-8, byte for byte, with each line's part encoded
 * once: the lines' texts are most of a snapshot, and a busy thread's snapshot is rewritten often
 * while its lines stay.
 */
export function encodeSnapshot(state: ThreadState, seq?: number): Uint8Array {
  // `{"thread":…,"seq":N` + `,"lines":[` … `],` + `"tail":…}`: the same keys in the same order.
  const headJson = JSON.stringify(snapshotHead(state, seq));
  const head = encoder.encode(`${headJson.slice(0, -1)},"lines":[`);
  const rest = encoder.encode(`],${JSON.stringify(snapshotRest(state)).slice(1)}`);
  const lines = state.outline;
  const parts: Uint8Array[] = [];
  let size = head.length + rest.length + Math.max(0, lines.length - 1);
  for (const line of lines) {
    let part = encodedLines.get(line);
    if (!part) {
      part = encoder.encode(JSON.stringify(snapshotLine(line)));
      encodedLines.set(line, part);
    }
    parts.push(part);
    size += part.length;
  }
  const bytes = new Uint8Array(size);
  bytes.set(head, 0);
  let at = head.length;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) bytes[at++] = COMMA;
    const part = parts[i] as Uint8Array;
    bytes.set(part, at);
    at += part.length;
  }
  bytes.set(rest, at);
  return bytes;
}
