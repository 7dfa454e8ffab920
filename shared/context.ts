import { runBatch, toLine, type Line } from "./batch.ts";
import type { ContextLine, SummaryJob } from "./jobs.ts";
import { nodeId, nodeLast, nodeSize, type NodeRef } from "./names.ts";
import { getNode } from "./nodes.ts";
import { findBuilt, tailEntry, type ThreadState } from "./thread.ts";
import { InvariantError } from "./errors.ts";

/** The summarizer's view of what came before a node is kept between these sizes (bytes). */
export const CONTEXT_BYTES: [number, number] = [16_000, 32_000];

/**
 * Lines before a node, oldest first, ending where the node starts: the outline's lines, then the
 * built leaves still in the tail. Past CONTEXT_BYTES[1] it merges further on the same sawtooth
 * (most due pairs whose parents are built) down to CONTEXT_BYTES[0]; if still too big, the oldest
 * lines go.
 */
export function contextBefore(
  state: ThreadState,
  node: NodeRef,
  sizes = CONTEXT_BYTES,
): ContextLine[] {
  const start = nodeId(node);
  const lines: Line[] = [];
  let bytes = 0;
  for (const line of state.outline) {
    if (nodeLast(line) >= start) break;
    lines.push(line);
    bytes += line.bytes;
  }
  for (let p = state.boundary; p < start; p++) {
    const leaf = getNode(state.nodes, 0, p);
    if (!leaf) continue;
    const line = toLine(leaf);
    lines.push(line);
    bytes += line.bytes;
  }
  let shown: Line[] = lines;
  if (bytes > sizes[1]) {
    const merged = runBatch(lines, bytes, start, sizes[0], (level, index) =>
      getNode(state.nodes, level, index),
    );
    shown = merged.lines;
    bytes = merged.bytes;
    let drop = 0;
    while (bytes > sizes[1] && drop < shown.length) bytes -= (shown[drop++] as Line).bytes;
    shown = shown.slice(drop);
  }
  return shown.map((line) => ({ id: nodeId(line), n: nodeSize(line), text: line.text }));
}

/** What the summarizer needs to build one node the thread asked for. */
export function jobFor(state: ThreadState, ref: NodeRef): SummaryJob {
  const base = {
    thread: state.thread,
    index: ref.index,
    name: `${nodeId(ref)}+${nodeSize(ref)}`,
    line: state.settings.line,
    context: contextBefore(state, ref),
  };
  if (ref.level === 0) {
    const entry = tailEntry(state, ref.index);
    if (!entry)
      throw new InvariantError(
        "LEAF_NOT_IN_TAIL",
        `leaf ${ref.index} of '${state.thread}' is not in the tail`,
      );
    return {
      ...base,
      kind: "leaf",
      level: 0,
      message: { ...entry.message, position: entry.position },
      seq: entry.seq,
    };
  }
  const leftRef = { level: ref.level - 1, index: ref.index * 2 };
  const rightRef = { level: ref.level - 1, index: ref.index * 2 + 1 };
  const left = findBuilt(state, leftRef);
  const right = findBuilt(state, rightRef);
  if (!left || !right) {
    throw new InvariantError(
      "CHILD_MISSING",
      `merge ${base.name} of '${state.thread}' lacks a built child`,
    );
  }
  return {
    ...base,
    kind: "merge",
    level: ref.level,
    left: { id: nodeId(left), n: nodeSize(left), text: left.text },
    right: { id: nodeId(right), n: nodeSize(right), text: right.text },
    first: nodeId(ref),
    last: nodeLast(ref),
  };
}
