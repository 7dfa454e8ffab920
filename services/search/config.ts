import { dirname, resolve } from "node:path";
import { SettingsError } from "../../shared/errors.ts";
import { instanceSearchFile, SEARCH_DB_VARIABLE } from "../config/load.ts";

/** Where the search index lives and how much page cache it may use (docs/search.md). */
export interface SearchConfig {
  /** The index file (absolute). */
  path: string;
  /**
   * With no file named, this instance's own file beside the default one, taken when another
   * search service holds the default (a second `npm start` in the same folder): the one named
   * after the HTTP port, which no other instance on this host can have.
   */
  fallback?: string;
  cacheMiB: number;
}

export const SEARCH_CACHE_VARIABLE = "OUTLINE_SEARCH_CACHE_MB";
export const DEFAULT_SEARCH_DB = ".data/search.db";
export const DEFAULT_SEARCH_CACHE_MB = 32;

export function parseSearchConfig(
  values: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
  port?: number,
): SearchConfig {
  const named = values[SEARCH_DB_VARIABLE]?.trim();
  const path = resolve(cwd, named || DEFAULT_SEARCH_DB);
  const raw = values[SEARCH_CACHE_VARIABLE]?.trim();
  let cacheMiB = DEFAULT_SEARCH_CACHE_MB;
  if (raw) {
    cacheMiB = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(cacheMiB >= 1 && cacheMiB <= 65_536)) {
      throw new SettingsError(
        SEARCH_CACHE_VARIABLE,
        `'${raw}' is not a size in MiB from 1 to 65536; write e.g. ${SEARCH_CACHE_VARIABLE}=${DEFAULT_SEARCH_CACHE_MB}`,
      );
    }
  }
  if (named || port === undefined || port === 0) return { path, cacheMiB };
  const fallback = instanceSearchFile(dirname(resolve(cwd, DEFAULT_SEARCH_DB)), port);
  return { path, fallback, cacheMiB };
}
