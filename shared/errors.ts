/**
 * A broken invariant of the core: a caller passed something the contract forbids. Expected
 * outcomes (a duplicate, an ignored stale result) are data, never this.
 */
export class InvariantError extends Error {
  override readonly name = "InvariantError";
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** A setting that does not parse: names the setting, what was wrong and what to write instead. */
export class SettingsError extends Error {
  override readonly name = "SettingsError";
  readonly code = "BAD_SETTING";
  readonly setting: string;
  constructor(setting: string, message: string) {
    super(`${setting}: ${message}`);
    this.setting = setting;
  }
}

/** A zoom request that breaks a rule of SPEC §6; `code` names the rule. */
export class ZoomError extends Error {
  override readonly name = "ZoomError";
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}
