import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { SettingsError } from "../../shared/errors.ts";
import type { InfraNames } from "../config/names.ts";

/**
 * Set by `npm start` for its services: the token naming this instance (its worker and its
 * prompt-builder), so the prompt-builder's /healthz can ask its own worker whether it joined.
 */
export const INSTANCE_VARIABLE = "OUTLINE_INSTANCE";

/** A subject token: `npm start` makes it from its pid and random hex. */
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

/** The instance token from the environment; undefined when unset (not run by `npm start`). */
export function instanceOf(
  values: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const raw = values[INSTANCE_VARIABLE]?.trim();
  if (raw === undefined || raw === "") return undefined;
  if (!TOKEN.test(raw))
    throw new SettingsError(INSTANCE_VARIABLE, `'${raw}' is not 1-64 of A-Z, a-z, 0-9, _ or -`);
  return raw;
}

/** Where an instance's worker answers whether it joined. */
export const joinSubject = (names: InfraNames, instance: string): string =>
  `${names.apiPrefix}.worker.joined.${instance}`;

/** What the worker answers: `joined` once it reads its share (partitioned) or consumes (single). */
export interface WorkerJoin {
  joined: boolean;
  /** What it is doing, for a person reading /healthz. */
  state: string;
}

/** The worker's side: answers on `subject` with its state at each request, from its start on. */
export function answerJoin(
  nc: NatsConnection,
  subject: string,
  state: () => WorkerJoin,
): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      if (!err) msg.respond(JSON.stringify(state()));
    },
  });
}

/**
 * The prompt-builder's side: the worker's answer, or why there is none (not started yet, not
 * subscribed yet, or too busy to answer within `timeoutMs`).
 */
export async function askJoin(
  nc: NatsConnection,
  subject: string,
  timeoutMs: number,
): Promise<WorkerJoin> {
  try {
    const reply = await nc.request(subject, undefined, { timeout: timeoutMs });
    return reply.json<WorkerJoin>();
  } catch (err) {
    return {
      joined: false,
      state: `its worker did not answer on ${subject} (${(err as Error).message}): still starting, or a NATS user may not use that subject (nats/nats-server.conf)`,
    };
  }
}
