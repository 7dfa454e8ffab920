import { stateName } from "../../../machines/state-name.ts";

/** One observed change of a thread actor: the line `outline inspect` prints. */
export interface Transition {
  at: Date;
  thread: string;
  sessionId: string;
  from: string;
  event: string;
  to: string;
  /** Short facts after the change: count, boundary, lines, jobs (and nodes held for a group). */
  detail: string;
}

export type InspectLine =
  | { kind: "actor"; at: Date; thread: string; sessionId: string }
  | ({ kind: "transition" } & Transition);

interface Session {
  thread: string;
  state: string;
}

function threadOf(snapshot: unknown, fallback: string): string {
  const context = (snapshot as { context?: Record<string, unknown> } | undefined)?.context;
  const thread = context?.thread ?? (context?.core as { thread?: unknown } | undefined)?.thread;
  return typeof thread === "string" ? thread : fallback;
}

function detailOf(snapshot: unknown): string {
  const c = (snapshot as { context?: Record<string, unknown> } | undefined)?.context;
  if (!c || c.count === undefined) return "";
  const n = (v: unknown): string => (typeof v === "number" ? String(v) : "?");
  const held = Number(c.held ?? 0);
  const jobs = Number(c.wanted ?? 0) + Number(c.inflight ?? 0) - held;
  const waits = typeof c.waitingFor === "string" ? ` waits=${c.waitingFor}` : "";
  return `count=${n(c.count)} boundary=${n(c.boundary)} lines=${n(c.outlineLines)} jobs=${jobs}${held > 0 ? ` held=${held}` : ""}${waits}`;
}

function timeOf(createdAt: unknown): Date {
  const ms = Number(createdAt);
  return Number.isFinite(ms) && ms > 0 ? new Date(ms) : new Date();
}

/**
 * Turns the inspection events `@statelyai/inspect`'s WebSocket inspector sends into lines: an
 * actor appearing, and each transition (from the state last seen for that actor, the event,
 * to the new state). `@xstate.event` messages are skipped: the snapshot after an event names it.
 */
export function createTransitionTracker(): (raw: unknown) => InspectLine | undefined {
  const sessions = new Map<string, Session>();
  return (raw) => {
    if (typeof raw !== "object" || raw === null) return undefined;
    const e = raw as {
      type?: unknown;
      sessionId?: unknown;
      snapshot?: { value?: unknown };
      event?: { type?: unknown };
      createdAt?: unknown;
    };
    if (typeof e.sessionId !== "string") return undefined;
    const at = timeOf(e.createdAt);
    if (e.type === "@xstate.actor") {
      // The inspector reads the actor's snapshot when it sends, not when the actor started,
      // so its state is not trusted here: the `xstate.init` transition that follows says it.
      const thread = threadOf(e.snapshot, e.sessionId);
      sessions.set(e.sessionId, { thread, state: "(new)" });
      return { kind: "actor", at, thread, sessionId: e.sessionId };
    }
    if (e.type !== "@xstate.snapshot") return undefined;
    const known = sessions.get(e.sessionId);
    const thread = threadOf(e.snapshot, known?.thread ?? e.sessionId);
    const to = stateName(e.snapshot?.value);
    const from = known?.state ?? "(new)";
    sessions.set(e.sessionId, { thread, state: to });
    const event = typeof e.event?.type === "string" && e.event.type !== "" ? e.event.type : "?";
    return {
      kind: "transition",
      at,
      thread,
      sessionId: e.sessionId,
      from,
      event,
      to,
      detail: detailOf(e.snapshot),
    };
  };
}

const clock = (d: Date): string => d.toISOString().slice(11, 23);

export function formatLine(line: InspectLine): string {
  if (line.kind === "actor") {
    return `${clock(line.at)}  ${line.thread}  actor registered (session ${line.sessionId})`;
  }
  return `${clock(line.at)}  ${line.thread}  ${line.from} --${line.event}--> ${line.to}${line.detail ? `  (${line.detail})` : ""}`;
}
