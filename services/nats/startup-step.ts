import { JetStreamApiError } from "@nats-io/jetstream";
import { backoffMs, sleep } from "../util/wait.ts";
import { isTransient } from "./transient.ts";

/**
 * How long one step of a start (a stream or bucket made, a key of the cluster bucket read) is
 * asked again. Two instances starting at once on a fresh R3 cluster make the same streams: the
 * second one's requests meet a stream still electing its first leader, which answers nothing
 * (tens of seconds on a loaded host: the cluster tests), and R3 creates themselves take seconds.
 */
export const STARTUP_RETRY_MS = 60_000;

/** "stream name already in use": made a moment ago by another instance, with another config. */
const STREAM_NAME_IN_USE = 10058;

/**
 * What a step of a start meets while another instance makes the same stream, or a new stream
 * elects its first leader: asked again. Called after JetStream was found on (ensureTopology), so
 * a publish that finds no responder (nats.js: "jetstream is not enabled") is a stream without a
 * leader; a stream name in use is asked again, and the step finds that stream and uses it.
 */
export function isTransientAtStart(err: unknown): boolean {
  if (isTransient(err)) return true;
  if (err instanceof Error && err.name === "JetStreamNotEnabled") return true;
  return err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE;
}

/** A step of a start that kept failing; the message names it, its attempts and how long. */
export class StartupStepError extends Error {
  override readonly name = "StartupStepError";
  readonly code = "STARTUP_STEP_FAILED";
}

export interface StartupStepOptions {
  /** Asked again for at most this long (STARTUP_RETRY_MS). */
  totalMs?: number;
  /** Told each time the step is asked again. */
  log?: (line: string) => void;
  /** The errors asked again (`isTransientAtStart`). */
  transient?: (err: unknown) => boolean;
  /** Tests: a clock and a wait of their own. */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs one step of a start (`what`: "creating stream KV_outline-cluster (R3)"), asking again
 * while it fails as a cluster does while it makes or elects (`isTransientAtStart`), for a bounded
 * time. Other errors are thrown as they are (they say what is wrong); a step still failing at
 * the end of its time throws StartupStepError naming it, so a start never ends on a bare
 * "timeout".
 */
export async function startupStep<T>(
  what: string,
  fn: () => Promise<T>,
  options: StartupStepOptions = {},
): Promise<T> {
  const totalMs = options.totalMs ?? STARTUP_RETRY_MS;
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? ((ms: number) => sleep(ms));
  const started = now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(options.transient ?? isTransientAtStart)(err)) throw err;
      const message = err instanceof Error ? err.message : String(err);
      const elapsed = now() - started;
      if (elapsed >= totalMs) {
        const how = /^timeout$/i.test(message) ? "timed out" : `failed: ${message}`;
        throw new StartupStepError(
          `${what} ${how} (${attempt} attempt(s) over ${(elapsed / 1000).toFixed(1)} s); check that every server of NATS_URL runs and can reach the others (a stream needs a leader, elected by most of its replicas)`,
          { cause: err },
        );
      }
      const wait = Math.min(backoffMs(attempt - 1, 250, 4_000, 0), totalMs - elapsed);
      options.log?.(`${what}: ${message} (attempt ${attempt}); asking again in ${wait} ms`);
      await pause(wait);
    }
  }
}
