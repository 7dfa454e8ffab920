import { SettingsError } from "./errors.ts";

/** The settings the outline algorithm itself reads (SPEC §3). */
export interface CoreSettings {
  /** A line's byte limit. */
  line: number;
  /** [low, high] estimated tokens: the tail grows to high, then cuts to at most low. */
  tail: [number, number];
  /** [low, high] bytes: the outline grows to high, then a batch merges to at most low. */
  outline: [number, number];
  /** Summarizer calls in flight. */
  concurrency: number;
  /**
   * Nodes sent to the summarizer together, in one call sharing one system prompt and one view
   * (HISTORY_GROUP). Due nodes wait until a group is full unless a cut or a merge batch needs
   * them. Unset (threads stored before it existed) or 1: each node alone, at once.
   */
  group?: number;
}

/** Every setting of SPEC §3, parsed. */
/**
 * The settings a thread runs under: they may change while it exists (from its next event) and
 * are recorded in its log (HISTORY), so a replay reproduces them without being told.
 */
export type ThreadSettings = Pick<CoreSettings, "line" | "tail" | "outline">;

export function threadSettingsOf(settings: ThreadSettings): ThreadSettings {
  return { line: settings.line, tail: [...settings.tail], outline: [...settings.outline] };
}

/** The variables that give a thread `settings`, as an environment would set them. */
export function threadSettingsText(settings: ThreadSettings): string {
  return `HISTORY_LINE=${settings.line} HISTORY_TAIL=${settings.tail.join(",")} HISTORY_OUTLINE=${settings.outline.join(",")}`;
}

export function sameThreadSettings(a: ThreadSettings, b: ThreadSettings): boolean {
  return (
    a.line === b.line &&
    a.tail[0] === b.tail[0] &&
    a.tail[1] === b.tail[1] &&
    a.outline[0] === b.outline[0] &&
    a.outline[1] === b.outline[1]
  );
}

export interface Settings extends CoreSettings {
  /** `extractive` or `openai/<model>`. */
  summarizer: string;
  /** HISTORY_SEARCH: agents are offered the `search` tool and the outline header names it. */
  search: boolean;
  /** Unset: `npm start` runs its own nats-server. */
  natsUrl: string | undefined;
  host: string;
  port: number;
}

export const DEFAULT_SETTINGS: Settings = {
  line: 512,
  tail: [12000, 48000],
  outline: [64000, 128000],
  concurrency: 8,
  group: 16,
  summarizer: "extractive",
  search: false,
  natsUrl: undefined,
  host: "127.0.0.1",
  port: 8080,
};

/** Environment variable of each setting, as documented in the README. */
export const SETTING_VARIABLES = {
  line: "HISTORY_LINE",
  tail: "HISTORY_TAIL",
  outline: "HISTORY_OUTLINE",
  summarizer: "HISTORY_SUMMARIZER",
  concurrency: "HISTORY_CONCURRENCY",
  group: "HISTORY_GROUP",
  search: "HISTORY_SEARCH",
  natsUrl: "NATS_URL",
  host: "HOST",
  port: "PORT",
} as const;

function positiveInt(variable: string, raw: string, min: number, max: number): number {
  const trimmed = raw.trim();
  if (!/^\d+$/.test(trimmed)) {
    throw new SettingsError(
      variable,
      `'${raw}' is not a whole number from ${min} to ${max}; write e.g. ${variable}=${min}`,
    );
  }
  const value = Number(trimmed);
  if (value < min || value > max) {
    throw new SettingsError(
      variable,
      `${value} is out of range; use a number from ${min} to ${max}`,
    );
  }
  return value;
}

function pair(variable: string, raw: string, min: number, example: string): [number, number] {
  const parts = raw.split(",");
  if (parts.length !== 2) {
    throw new SettingsError(
      variable,
      `'${raw}' is not two numbers 'low,high'; write e.g. ${variable}=${example}`,
    );
  }
  const low = positiveInt(variable, parts[0] ?? "", min, 1e12);
  const high = positiveInt(variable, parts[1] ?? "", min, 1e12);
  if (high < low) {
    throw new SettingsError(
      variable,
      `high (${high}) is below low (${low}); write 'low,high' with low ≤ high, e.g. ${example}`,
    );
  }
  return [low, high];
}

/** One server of NATS_URL: `scheme://rest` (no space, no comma) or `host:port`. */
const NATS_SERVER = /^(?:(?:nats|tls|ws|wss):\/\/[^\s,]+|[\w.-]+:\d+)$/;

/**
 * NATS_URL: one server or several of one cluster, comma-separated (SPEC §9). Each entry is
 * checked alone, so a bad one is named (not the whole list) and blanks around commas are
 * allowed; the list comes back without them.
 */
function natsUrlList(raw: string): string {
  const entries = raw.split(",").map((entry) => entry.trim());
  for (const [i, entry] of entries.entries()) {
    if (NATS_SERVER.test(entry)) continue;
    const where = entries.length > 1 ? ` (server ${i + 1} of ${entries.length} in '${raw}')` : "";
    const what = entry === "" ? "an empty entry" : `'${entry}'`;
    throw new SettingsError(
      SETTING_VARIABLES.natsUrl,
      `${what}${where} is not a NATS URL; write e.g. nats://127.0.0.1:4222 or 127.0.0.1:4222, several servers comma-separated`,
    );
  }
  return entries.join(",");
}

/**
 * Reads settings from a flat record of strings (the environment, or a config file flattened to
 * the same names). Anything that does not parse throws a SettingsError naming the variable.
 */
export function parseSettings(source: Readonly<Record<string, string | undefined>>): Settings {
  const get = (name: string): string | undefined => {
    const value = source[name];
    return value === undefined || value.trim() === "" ? undefined : value;
  };
  const s: Settings = {
    ...DEFAULT_SETTINGS,
    tail: [...DEFAULT_SETTINGS.tail],
    outline: [...DEFAULT_SETTINGS.outline],
  };
  const line = get(SETTING_VARIABLES.line);
  if (line !== undefined) s.line = positiveInt(SETTING_VARIABLES.line, line, 16, 1 << 20);
  const tail = get(SETTING_VARIABLES.tail);
  if (tail !== undefined) s.tail = pair(SETTING_VARIABLES.tail, tail, 1, "12000,48000");
  const outline = get(SETTING_VARIABLES.outline);
  if (outline !== undefined)
    s.outline = pair(SETTING_VARIABLES.outline, outline, 1, "64000,128000");
  const summarizer = get(SETTING_VARIABLES.summarizer);
  if (summarizer !== undefined) {
    const value = summarizer.trim();
    if (value !== "extractive" && !/^openai\/\S+$/.test(value)) {
      throw new SettingsError(
        SETTING_VARIABLES.summarizer,
        `'${value}' is not a summarizer; use 'extractive' (offline) or 'openai/<model>', e.g. openai/gpt-4o-mini`,
      );
    }
    s.summarizer = value;
  }
  const concurrency = get(SETTING_VARIABLES.concurrency);
  if (concurrency !== undefined)
    s.concurrency = positiveInt(SETTING_VARIABLES.concurrency, concurrency, 1, 1024);
  const group = get(SETTING_VARIABLES.group);
  if (group !== undefined) s.group = positiveInt(SETTING_VARIABLES.group, group, 1, 64);
  const search = get(SETTING_VARIABLES.search);
  if (search !== undefined) {
    const value = search.trim().toLowerCase();
    if (value !== "on" && value !== "off") {
      throw new SettingsError(
        SETTING_VARIABLES.search,
        `'${search}' is not on or off; write ${SETTING_VARIABLES.search}=on to offer agents the search tool`,
      );
    }
    s.search = value === "on";
  }
  const nats = get(SETTING_VARIABLES.natsUrl);
  if (nats !== undefined) s.natsUrl = natsUrlList(nats);
  const host = get(SETTING_VARIABLES.host);
  if (host !== undefined) s.host = host.trim();
  const port = get(SETTING_VARIABLES.port);
  if (port !== undefined) s.port = positiveInt(SETTING_VARIABLES.port, port, 0, 65535);
  if (s.outline[0] < s.line * 2) {
    throw new SettingsError(
      SETTING_VARIABLES.outline,
      `low (${s.outline[0]}) must hold at least two lines of ${s.line} bytes; raise it to ${s.line * 2} or more`,
    );
  }
  return s;
}
