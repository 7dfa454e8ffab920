import { SettingsError } from "../../shared/errors.ts";

/** Names of the streams, subjects and bucket that make up the public contract (SPEC §7, §8). */
export interface InfraNames {
  /** Stream the chat platform publishes to. */
  chatStream: string;
  /** First subject token(s) of chat events: `<chatPrefix>.<thread>.message.created`. */
  chatPrefix: string;
  /** Stream of built summary nodes, so a replay needs no model call. */
  historyStream: string;
  /** `<historyPrefix>.<thread>.<level>.<index>`. */
  historyPrefix: string;
  /** Stream that keeps dead letters. */
  deadStream: string;
  /**
   * Prefix of the dead-letter subjects: `<deadSubject>.<thread>` per thread (erased with it) and
   * `<deadSubject>.unknown.thread`; versions before put every letter on `<deadSubject>` itself.
   */
  deadSubject: string;
  /** KV bucket of the latest outline snapshot per thread. */
  kvBucket: string;
  /** Subject prefix of the prompt-builder's request/reply API: `<apiPrefix>.<operation>`. */
  apiPrefix: string;
  /** Durable consumer name the thread workers share on the chat stream. */
  workerDurable: string;
  /**
   * Partitions of the threads (docs/scale-out.md): set when the server maps
   * `<chatPrefix>.<thread>.<kind>` to `….<kind>.<partition>`; unset is single mode.
   */
  partitions?: number;
}

/** The names that are strings (every field but `partitions`). */
export type NameKey = keyof typeof NAME_VARIABLES;

export const DEFAULT_NAMES: Readonly<InfraNames> = {
  chatStream: "CHAT",
  chatPrefix: "chat",
  historyStream: "HISTORY",
  historyPrefix: "history",
  deadStream: "DEAD",
  deadSubject: "outline.dead",
  kvBucket: "outline",
  apiPrefix: "outline.api",
  workerDurable: "outline-thread-worker",
};

export const NAME_VARIABLES = {
  chatStream: "OUTLINE_CHAT_STREAM",
  chatPrefix: "OUTLINE_CHAT_PREFIX",
  historyStream: "OUTLINE_HISTORY_STREAM",
  historyPrefix: "OUTLINE_HISTORY_PREFIX",
  deadStream: "OUTLINE_DEAD_STREAM",
  deadSubject: "OUTLINE_DEAD_SUBJECT",
  kvBucket: "OUTLINE_KV_BUCKET",
  apiPrefix: "OUTLINE_API_PREFIX",
  workerDurable: "OUTLINE_WORKER_DURABLE",
} as const satisfies Record<Exclude<keyof InfraNames, "partitions">, string>;

export const PARTITIONS_VARIABLE = "OUTLINE_PARTITIONS";
/** More would be more consumers (Raft groups on a cluster) than a NATS cluster runs well. */
export const MAX_PARTITIONS = 4096;

// JetStream stream, consumer and bucket names become subject tokens of the $JS API, so the
// server rejects '.', '*', '>' and whitespace; we keep to a portable subset.
const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** Whether a stream, consumer or bucket name is one we accept (1–64 of A-Z, a-z, 0-9, _ or -). */
export const isValidName = (name: string): boolean => NAME.test(name);
// A literal subject: dot-separated tokens without wildcards.
const SUBJECT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

const kinds = {
  chatStream: "name",
  chatPrefix: "subject",
  historyStream: "name",
  historyPrefix: "subject",
  deadStream: "name",
  deadSubject: "subject",
  kvBucket: "name",
  apiPrefix: "subject",
  workerDurable: "name",
} as const satisfies Record<NameKey, "name" | "subject">;

function isUnder(subject: string, prefix: string): boolean {
  return subject === prefix || subject.startsWith(`${prefix}.`);
}

/** Reads the infrastructure names; a bad or clashing name throws a SettingsError naming it. */
export function parseNames(source: Readonly<Record<string, string | undefined>>): InfraNames {
  const names: InfraNames = { ...DEFAULT_NAMES };
  for (const key of Object.keys(NAME_VARIABLES) as NameKey[]) {
    const variable = NAME_VARIABLES[key];
    const raw = source[variable]?.trim();
    if (raw === undefined || raw === "") continue;
    if (kinds[key] === "name" && !NAME.test(raw)) {
      throw new SettingsError(
        variable,
        `'${raw}' is not a valid name; use 1–64 characters of A-Z, a-z, 0-9, '_' or '-', e.g. ${DEFAULT_NAMES[key]}`,
      );
    }
    if (kinds[key] === "subject" && !SUBJECT.test(raw)) {
      throw new SettingsError(
        variable,
        `'${raw}' is not a literal subject; use dot-separated tokens of A-Z, a-z, 0-9, '_' or '-' without wildcards, e.g. ${DEFAULT_NAMES[key]}`,
      );
    }
    names[key] = raw;
  }

  // One subject may belong to one stream only, so the server would refuse overlapping streams;
  // saying which variables clash is more useful than its "subjects overlap" error.
  const prefixes: [NameKey, string][] = [
    ["chatPrefix", names.chatPrefix],
    ["historyPrefix", names.historyPrefix],
    ["deadSubject", names.deadSubject],
    ["apiPrefix", names.apiPrefix],
  ];
  for (const [i, [keyA, a]] of prefixes.entries()) {
    for (const [keyB, b] of prefixes.slice(i + 1)) {
      if (isUnder(a, b) || isUnder(b, a)) {
        throw new SettingsError(
          NAME_VARIABLES[keyB],
          `'${b}' overlaps ${NAME_VARIABLES[keyA]}='${a}'; each needs its own subject space, e.g. ${DEFAULT_NAMES[keyB]}`,
        );
      }
    }
  }
  const streams: [NameKey, string][] = [
    ["chatStream", names.chatStream],
    ["historyStream", names.historyStream],
    ["deadStream", names.deadStream],
    // The bucket lives in a stream named KV_<bucket>.
    ["kvBucket", `KV_${names.kvBucket}`],
  ];
  for (const [i, [keyA, a]] of streams.entries()) {
    for (const [keyB, b] of streams.slice(i + 1)) {
      if (a === b) {
        throw new SettingsError(
          NAME_VARIABLES[keyB],
          `stream '${b}' is also ${NAME_VARIABLES[keyA]}; give each stream its own name`,
        );
      }
    }
  }
  const partitions = source[PARTITIONS_VARIABLE]?.trim();
  if (partitions !== undefined && partitions !== "") {
    const n = Number(partitions);
    if (!/^[0-9]+$/.test(partitions) || n < 1 || n > MAX_PARTITIONS) {
      throw new SettingsError(
        PARTITIONS_VARIABLE,
        `'${partitions}' is not a partition count; use a whole number from 1 to ${MAX_PARTITIONS}, the N of the server's {{partition(N,1)}} mapping (docs/scale-out.md), or leave it unset for one instance`,
      );
    }
    names.partitions = n;
  }
  return names;
}

/** The variables that give a process these names (the inverse of parseNames). */
export function namesToEnv(names: InfraNames): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of Object.keys(NAME_VARIABLES) as NameKey[]) env[NAME_VARIABLES[key]] = names[key];
  if (names.partitions !== undefined) env[PARTITIONS_VARIABLE] = String(names.partitions);
  return env;
}
