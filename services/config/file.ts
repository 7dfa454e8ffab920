import { readFileSync } from "node:fs";
import { SettingsError } from "../../shared/errors.ts";

/**
 * Reads a JSON config file whose keys are the environment variable names. Numbers are accepted
 * for convenience (`"HISTORY_LINE": 512`), and a pair as `[low, high]`, because people write them
 * that way; anything else is refused so a typo'd structure is not silently ignored.
 */
export function readConfigFile(file: string, variable: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new SettingsError(
      variable,
      `cannot read config file '${file}' (${(err as Error).message}); fix the path or unset ${variable}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new SettingsError(
      variable,
      `config file '${file}' is not valid JSON (${(err as Error).message}); write an object such as {"HISTORY_TAIL": "12000,48000"}`,
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new SettingsError(
      variable,
      `config file '${file}' must hold one JSON object of variable names, e.g. {"HISTORY_LINE": "512"}`,
    );
  }
  const values: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value === "string") values[key] = value;
    else if (typeof value === "number" && Number.isFinite(value)) values[key] = String(value);
    else if (
      Array.isArray(value) &&
      value.length === 2 &&
      value.every((v) => typeof v === "number" && Number.isFinite(v))
    ) {
      values[key] = value.join(",");
    } else {
      throw new SettingsError(
        key,
        `in config file '${file}' the value ${JSON.stringify(value)} is neither a string nor a number; write e.g. "${key}": "…"`,
      );
    }
  }
  return values;
}
