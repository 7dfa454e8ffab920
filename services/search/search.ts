import type { SearchHit, SearchReply } from "../../shared/api.ts";
import {
  lineHolding,
  MAX_QUERY_CHARS,
  normalizeText,
  planQuery,
  snippet,
} from "../../shared/search.ts";
import { ApiError, notFound } from "../api/api-error.ts";
import type { StoredSnapshot, ThreadReader } from "../nats/reader.ts";
import { beforeArg, limitArg, threadArg, type RawRequest } from "../api/requests.ts";
import { CoverageCache, type Coverage } from "./coverage.ts";
import type { SearchIndexer } from "./indexer.ts";

/** The search operation (SPEC §8), free of any transport. */
export interface SearchArgs {
  thread: string;
  /** The text to find, normalized (NFC, white space as single spaces). */
  q: string;
  /** Only messages at positions below this; undefined: from the newest. */
  before: number | undefined;
  limit: number;
}

export type { SearchHit, SearchReply };

/**
 * A 503 SEARCH_INDEX_BEHIND comes after the service waited 2 s for its index to reach the
 * thread's newest message: it is catching up with CHAT, which takes seconds, so the caller is
 * told when to ask again rather than asked again at once (it would wait again, and add load to
 * an index already behind).
 */
export const SEARCH_BEHIND_RETRY_S = 5;

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

const bad = (code: string, message: string) => new ApiError(400, code, message);

/** The arguments of a search, checked the same way whichever transport brought them. */
export function searchArgs(raw: RawRequest): SearchArgs {
  const thread = threadArg(raw);
  const value = raw.q;
  if (value !== undefined && value !== null && typeof value !== "string") {
    throw bad("BAD_QUERY", `q must be a string (the text to find), got ${JSON.stringify(value)}`);
  }
  const q = normalizeText(value ?? "");
  if (q === "") {
    throw bad(
      "MISSING_QUERY",
      "search needs q, the text to find, e.g. q=locker%20code; matching is plain text, any case",
    );
  }
  if ([...q].length > MAX_QUERY_CHARS) {
    throw bad("QUERY_TOO_LONG", `q is at most ${MAX_QUERY_CHARS} characters; search for a part`);
  }
  const before = beforeArg(raw, "a message position");
  return { thread, q, before, limit: limitArg(raw, DEFAULT_LIMIT, MAX_LIMIT, "hits") };
}

export interface SearchOptions {
  /** How long a query waits for the index to reach the thread's newest message. */
  waitMs?: number;
}

export type Search = (raw: RawRequest) => Promise<SearchReply>;

/**
 * Answers from the instance's index, once it holds the thread's newest message: the thread's
 * newest CHAT sequence is read afresh for each query (as a prompt request does), so a message
 * stored a moment ago is never missed. The snapshot gives each hit its line.
 */
export function createSearch(
  reader: Pick<ThreadReader, "storedSnapshot" | "storedSnapshotSince" | "lastMessageSeq">,
  indexer: SearchIndexer,
  options: SearchOptions = {},
): Search {
  const waitMs = options.waitMs ?? 2_000;
  const coverage = new CoverageCache();

  /**
   * The thread's snapshot, or the coverage kept of it when its revision is still the key's value:
   * asked by revision, so a query on an unchanged thread reads none of its ~100 KB of bytes.
   */
  async function snapshotOf(
    thread: string,
  ): Promise<{ kept?: Coverage; stored?: StoredSnapshot | undefined }> {
    const held = reader.storedSnapshotSince && coverage.held(thread);
    if (!held || !reader.storedSnapshotSince)
      return { stored: await reader.storedSnapshot(thread) };
    const got = await reader.storedSnapshotSince(thread, held);
    if (got !== "unchanged") return { stored: got };
    // Another query may have let it go meanwhile (the cache is full): read it whole.
    const kept = coverage.unchanged(thread);
    return kept ? { kept } : { stored: await reader.storedSnapshot(thread) };
  }

  return async (raw) => {
    const args = searchArgs(raw);
    const { thread } = args;
    const [snapshot, lastSeq] = await Promise.all([
      snapshotOf(thread),
      reader.lastMessageSeq(thread),
    ]);
    const { lines, boundary } = snapshot.kept ?? coverage.of(thread, snapshot.stored);
    if (!snapshot.kept && !snapshot.stored && lastSeq === 0) {
      // Deleted (its erase ran before this index read the delete) or never existed.
      indexer.store().eraseGone(new Set(), thread);
      throw notFound(thread);
    }
    if (indexer.store().appliedSeq < lastSeq && !(await indexer.reach(lastSeq, waitMs))) {
      const { applied, last } = indexer.progress();
      throw new ApiError(
        503,
        "SEARCH_INDEX_BEHIND",
        `the search index has read CHAT up to sequence ${applied} of ${last}; thread '${thread}' has messages up to ${lastSeq}: it is catching up (see the search service's log), retry in a few seconds`,
        { retryAfter: SEARCH_BEHIND_RETRY_S },
      );
    }
    const page = indexer
      .store()
      .search(thread, planQuery(args.q), args.before ?? Number.MAX_SAFE_INTEGER, args.limit);
    return {
      hits: page.hits.map((h) => ({
        id: h.position,
        message: h.message,
        in: lineHolding(lines, boundary, h.position),
        at: h.at,
        from: h.from,
        snippet: snippet(h.text, args.q),
      })),
      before: page.before,
    };
  };
}
