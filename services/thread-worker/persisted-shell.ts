import type { Actor } from "xstate";
import { isState, stateName } from "../../machines/state-name.ts";
import type { ThreadMachine } from "../../machines/thread.ts";
import type { PersistedActor } from "./actor-store.ts";

/**
 * The actor's `getPersistedSnapshot()`, without XState walking the whole context for actor
 * references to serialise: the context is the core, plain data that holds none (the machine
 * spawns no actor), so it is set back as is. Saved many times a second, that walk went over every
 * tail message's fields. XState's part (status, value, history, children…) is derived from the
 * snapshot fields in `ShellKey` alone and kept while they are the same objects: most saves
 * reuse it instead of copying the snapshot's fields again.
 */
export function persistedSnapshotOf(
  actor: Actor<ThreadMachine>,
  cache: { key?: ShellKey; shell?: PersistedActor },
): PersistedActor {
  const snapshot = actor.getSnapshot();
  const key = cache.key;
  if (
    !key ||
    key.status !== snapshot.status ||
    !isState(snapshot.value, key.value) ||
    key.historyValue !== snapshot.historyValue ||
    key.children !== snapshot.children ||
    key.output !== snapshot.output ||
    key.error !== snapshot.error
  ) {
    cache.shell = actor.logic.getPersistedSnapshot({
      ...snapshot,
      context: NO_CONTEXT,
    } as unknown as typeof snapshot) as unknown as PersistedActor;
    const { status, historyValue, children, output, error } = snapshot;
    // By name: XState makes a new object for a nested state value at every transition.
    const value = stateName(snapshot.value);
    cache.key = { status, value, historyValue, children, output, error };
  }
  // A copy in the shell's key order, the context in its place.
  return { ...(cache.shell as PersistedActor), context: snapshot.context };
}
const NO_CONTEXT = {};

/** The snapshot fields XState's persisted form is made of, besides the context. */
export interface ShellKey {
  status: unknown;
  /** The state's name (stateName). */
  value: string;
  historyValue: unknown;
  children: unknown;
  output: unknown;
  error: unknown;
}
