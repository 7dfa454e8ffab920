// The jobs a thread hands out (wanted → in flight, whole groups unless a cut or batch waits), the
// free nodes it keeps until the host publishes them (the outbox), and whether it is at rest.
import type { NodeRef } from "./names.ts";
import { initialThreadState, sameRef, type ThreadState } from "./thread-state.ts";

/**
 * The wanted or in-flight nodes the first pending step waits for: the parent a merge batch needs,
 * else the leaves of the messages the first planned cut takes out. Empty when nothing waits.
 */
export function blockingNodes(state: ThreadState): NodeRef[] {
  const outstanding = [...state.inflight, ...state.wanted];
  const needed = state.batch?.waitingFor;
  if (needed) return outstanding.filter((r) => sameRef(r, needed));
  const cut = state.cuts[0];
  if (!cut) return [];
  return outstanding.filter(
    (r) => r.level === 0 && r.index >= state.boundary && r.index < cut.boundary,
  );
}
/** A summarizer attempt failed: the node goes back to the front of the queue. */
export function summaryFailed(state: ThreadState, ref: NodeRef): ThreadState {
  const at = state.inflight.findIndex((r) => sameRef(r, ref));
  if (at < 0) return state;
  return {
    ...state,
    inflight: state.inflight.filter((_, i) => i !== at),
    wanted: [ref, ...state.wanted],
  };
}

/** The wanted nodes, the parent a waiting merge batch needs first (the rest in request order). */
export function neededFirst(state: ThreadState): NodeRef[] {
  const wanted = state.wanted;
  const needed = state.batch?.waitingFor;
  if (!needed) return wanted;
  const at = wanted.findIndex((r) => sameRef(r, needed));
  return at > 0 ? [needed, ...wanted.slice(0, at), ...wanted.slice(at + 1)] : wanted;
}

/** Nodes per summarizer call (HISTORY_GROUP); 1 for threads stored before groups existed. */
export function groupSize(state: ThreadState): number {
  return Math.max(1, state.settings.group ?? 1);
}

/** A cut or a merge batch is waiting for nodes: every wanted node goes now, group full or not. */
function urgent(state: ThreadState): boolean {
  return state.cuts.length > 0 || state.batch !== null;
}

/**
 * Wanted nodes that wait for their group to fill: nothing needs them yet (no cut or batch is
 * waiting) and fewer than a group are wanted. A due leaf is certain to leave at the next cut,
 * which comes only after the tail grew by tail[1] − tail[0], so holding it costs no wait in a
 * live thread and lets one summarizer call build a whole group.
 */
export function heldBack(state: ThreadState): number {
  const group = groupSize(state);
  if (group <= 1 || urgent(state)) return 0;
  return state.wanted.length % group;
}

/**
 * Hands out jobs up to the concurrency limit (in nodes: `concurrency` calls of a group each):
 * the parent a waiting batch needs first, then in request order (due leaves in position order,
 * merges as their children complete). With groups, only whole groups go unless a cut or a batch
 * waits (`heldBack`); `hold: false` hands out held nodes too (a host that flushes on purpose).
 */
export function takeJobs(
  state: ThreadState,
  limit = state.settings.concurrency * groupSize(state),
  hold = true,
): { state: ThreadState; started: NodeRef[] } {
  const held = hold ? heldBack(state) : 0;
  const room = Math.min(limit - state.inflight.length, state.wanted.length - held);
  if (room <= 0) return { state, started: [] };
  const wanted = neededFirst(state);
  const started = wanted.slice(0, room);
  return {
    state: { ...state, wanted: wanted.slice(room), inflight: [...state.inflight, ...started] },
    started,
  };
}

/** After a restore: jobs that were in flight are asked again (their answers were lost). */
export function restartJobs(state: ThreadState): ThreadState {
  if (state.inflight.length === 0) return state;
  return { ...state, wanted: [...state.inflight, ...state.wanted], inflight: [] };
}

/** The host published the first `count` outbox nodes to HISTORY. */
export function outboxPublished(state: ThreadState, count: number): ThreadState {
  if (count <= 0) return state;
  return { ...state, outbox: state.outbox.slice(count) };
}

/** SPEC §4 `thread.deleted`: nothing of the thread is kept; it takes no more messages. */
export function deleteThread(state: ThreadState): ThreadState {
  return {
    ...initialThreadState(state.thread, state.settings, state.complete),
    deleted: true,
    seq: state.seq,
  };
}

/** Nothing outstanding: every asked summary is in and every planned cut and batch applied. */
export function isSettled(state: ThreadState): boolean {
  return (
    state.wanted.length === 0 &&
    state.inflight.length === 0 &&
    state.cuts.length === 0 &&
    state.batch === null
  );
}

/**
 * Nothing to do until the next event: nothing in flight, no cut or batch waiting, and any wanted
 * nodes are held for their group (`heldBack`). A thread at rest needs no wake-up after a restart.
 */
export function isAtRest(state: ThreadState): boolean {
  return (
    state.inflight.length === 0 &&
    state.cuts.length === 0 &&
    state.batch === null &&
    state.wanted.length === heldBack(state)
  );
}
