import { SettingsError } from "../../shared/errors.ts";

/** Variables as the config gives them (file values overlaid with the environment). */
export type SettingValues = Readonly<Record<string, string | undefined>>;

/**
 * A whole number ≥ `min` from an OUTLINE_* variable, undefined when unset; a bad value stops the
 * start naming it.
 */
export function wholeSetting(
  values: SettingValues,
  variable: string,
  min: number,
  unit: string,
  example: number,
): number | undefined {
  const raw = values[variable]?.trim();
  if (!raw) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min) {
    throw new SettingsError(
      variable,
      `'${raw}' is not ${unit} ≥ ${min}; write e.g. ${variable}=${example}`,
    );
  }
  return Number(raw);
}
