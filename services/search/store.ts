import { mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { Message } from "../../shared/events.ts";
import { denseGrams, fold, searchableText, type QueryPlan } from "../../shared/search.ts";
import { SEARCH_DB_VARIABLE } from "../config/load.ts";

/**
 * The search index of one instance: an SQLite file holding every valid message of every thread
 * in CHAT (its position, id, time, author and searchable text), an FTS5 trigram index over the
 * texts, a gram index of dense characters (CJK, emoji), and the CHAT sequence applied last,
 * written in the same transaction as the rows it covers: after a crash the file holds exactly
 * the events up to that sequence, and reading CHAT on from there applies nothing twice.
 *
 * Positions are the worker's (SPEC §2): a thread's valid message.created events in stream order,
 * a message id once for the thread's whole life, nothing after its thread.deleted.
 *
 * A row's id is `thread key << 32 | position`, so one thread's rows are one id range: every query
 * is a range scan from `before` down, newest first, and stops after `limit` hits.
 */
export const SCHEMA_VERSION = 1;

/** Messages a scan (a short query outside the indexes) reads per page, newest first. */
export const SCAN_ROWS = 10_000;

/**
 * Messages holding a phrase's words that are checked for the phrase itself; more than this and
 * the words are common, so the phrase is looked up in the index instead (WordsFirst).
 */
export const CANDIDATES = 256;

/** One CHAT event as the index applies it. */
export type IndexEvent =
  | { kind: "message"; seq: number; thread: string; message: Message }
  | { kind: "deleted"; seq: number; thread: string }
  /** Anything else stored in CHAT (invalid events): only the sequence moves on. */
  | { kind: "other"; seq: number };

/** A matching message as stored. */
export interface IndexedHit {
  position: number;
  message: string;
  at: string;
  from: string;
  text: string;
}

export interface HitPage {
  hits: IndexedHit[];
  /** Where the next page starts (pass as `before`), or null when nothing older can match. */
  before: number | null;
}

/** The stream the file was built from: another stream (recreated, renamed) means a rebuild. */
export interface StreamIdentity {
  name: string;
  created: string;
}

export interface StoreOptions {
  /** SQLite page cache, in MiB (the index's memory bound besides one apply batch). */
  cacheMiB?: number;
  /** CANDIDATES, smaller in tests to take both ways. */
  candidates?: number;
}

export interface ApplyCounts {
  indexed: number;
  duplicates: number;
  deleted: number;
}

const ID = "((@key << 32) | @position)";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS threads (
  key INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  count INTEGER NOT NULL DEFAULT 0,
  deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY,
  thread INTEGER NOT NULL,
  mid TEXT NOT NULL,
  at TEXT NOT NULL,
  sender TEXT NOT NULL,
  text TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_mid ON messages (thread, mid);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5 (
  text, content='messages', content_rowid='id',
  tokenize='trigram case_sensitive 0', columnsize=0
);
CREATE VIRTUAL TABLE IF NOT EXISTS grams USING fts5 (
  g, content='', contentless_delete=1, tokenize='ascii', detail=none
);
`;

// SQLite's primary result codes (an extended code carries one in its low byte).
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_CORRUPT = 11;
const SQLITE_NOTADB = 26;
const sqliteCode = (err: unknown): number | undefined => {
  const code = (err as { errcode?: unknown }).errcode;
  return typeof code === "number" ? code & 0xff : undefined;
};

/** A numeric pragma's value. */
const pragma = (db: DatabaseSync, name: string): number =>
  Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0]);

/** Runs `body` in one transaction: all of it is written, or none of it. */
function transaction(db: DatabaseSync, body: () => void): void {
  db.exec("BEGIN");
  try {
    body();
    db.exec("COMMIT");
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/** The index file could not be opened as ours (corrupt, another program's, another version). */
export class StoreMismatch extends Error {
  override readonly name = "StoreMismatch";
}

/** The file is held by another search service (its lock). */
export class StoreBusy extends Error {
  override readonly name = "StoreBusy";
}

type Row = { position: number; mid: string; at: string; sender: string; text: string };
const asHit = (r: Row): IndexedHit => ({
  position: r.position,
  message: r.mid,
  at: r.at,
  from: r.sender,
  text: r.text,
});

export class SearchStore {
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #s;
  readonly #candidates: number;
  #applied: number;

  private constructor(path: string, db: DatabaseSync, candidates: number) {
    this.path = path;
    this.#db = db;
    this.#candidates = candidates;
    const p = (sql: string) => db.prepare(sql);
    this.#s = {
      meta: p("SELECT value FROM meta WHERE key = ?"),
      setMeta: p(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ),
      thread: p("SELECT key, count, deleted FROM threads WHERE name = ?"),
      addThread: p("INSERT INTO threads (name) VALUES (?) RETURNING key"),
      counted: p("UPDATE threads SET count = count + 1 WHERE key = ?"),
      tombstone: p("UPDATE threads SET deleted = 1, count = 0 WHERE key = ?"),
      addMessage: p(
        `INSERT OR IGNORE INTO messages (id, thread, mid, at, sender, text) VALUES (${ID}, @key, @mid, @at, @sender, @text)`,
      ),
      addText: p(`INSERT INTO fts (rowid, text) VALUES (${ID}, @text)`),
      addGrams: p(`INSERT INTO grams (rowid, g) VALUES (${ID}, @text)`),
      eraseText: p(
        "INSERT INTO fts (fts, rowid, text) SELECT 'delete', id, text FROM messages WHERE id BETWEEN (@key << 32) AND (@key << 32) | 4294967295 AND text IS NOT NULL",
      ),
      eraseGrams: p(
        "DELETE FROM grams WHERE rowid BETWEEN (@key << 32) AND (@key << 32) | 4294967295",
      ),
      eraseMessages: p(
        "DELETE FROM messages WHERE id BETWEEN (@key << 32) AND (@key << 32) | 4294967295",
      ),
      live: p("SELECT name FROM threads WHERE deleted = 0 AND count > 0"),
      totals: p(
        "SELECT count(*) AS threads, coalesce(sum(count), 0) AS messages FROM threads WHERE deleted = 0",
      ),
      trigram: p(
        "SELECT f.rowid & 4294967295 AS position, m.mid, m.at, m.sender, m.text FROM fts f JOIN messages m ON m.id = f.rowid WHERE fts MATCH @match AND f.rowid BETWEEN (@key << 32) AND (@key << 32) | @top ORDER BY f.rowid DESC LIMIT @limit",
      ),
      grams: p(
        "SELECT g.rowid & 4294967295 AS position, m.mid, m.at, m.sender, m.text FROM grams g JOIN messages m ON m.id = g.rowid WHERE grams MATCH @match AND g.rowid BETWEEN (@key << 32) AND (@key << 32) | @top ORDER BY g.rowid DESC LIMIT @limit",
      ),
      candidates: p(
        "SELECT rowid & 4294967295 AS position FROM fts WHERE fts MATCH @match AND rowid BETWEEN (@key << 32) AND (@key << 32) | @top ORDER BY rowid DESC LIMIT @cap",
      ),
      checked: p(
        "SELECT id & 4294967295 AS position, mid, at, sender, text FROM messages WHERE id IN (SELECT (@key << 32) | value FROM json_each(@positions)) AND text IS NOT NULL ORDER BY id DESC",
      ),
      scan: p(
        "SELECT id & 4294967295 AS position, mid, at, sender, text FROM messages WHERE id BETWEEN (@key << 32) | @from AND (@key << 32) | @top AND text IS NOT NULL AND folded_has(text, @folded) ORDER BY id DESC LIMIT @limit",
      ),
      merge: p("INSERT INTO fts (fts, rank) VALUES ('merge', ?)"),
    };
    this.#applied = Number(this.#meta("seq") ?? 0);
  }

  /**
   * Opens (or creates) the index at `path`. A file that is not an index of this version throws
   * StoreMismatch: the caller removes it and builds anew (`SearchStore.remove`).
   */
  static open(path: string, options: StoreOptions = {}): SearchStore {
    mkdirSync(dirname(path), { recursive: true });
    let db: DatabaseSync | undefined;
    try {
      // A second opener waits up to 5 s for the lock before it is told the file is in use.
      db = new DatabaseSync(path, { timeout: 5000, allowUnknownNamedParameters: true });
      // One process per file: a second search service on the same file would apply every event
      // again. The lock is taken now (a write) and held until close.
      db.exec("PRAGMA locking_mode = EXCLUSIVE");
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("BEGIN IMMEDIATE; COMMIT");
      // A crash loses nothing (WAL); a power cut may take back the last transactions, and with
      // them the sequence they moved to: CHAT is read again from there.
      db.exec("PRAGMA synchronous = NORMAL");
      db.exec(`PRAGMA cache_size = -${(options.cacheMiB ?? 32) * 1024}`);
      db.exec("PRAGMA mmap_size = 0");
      db.function("folded_has", { deterministic: true }, (text: unknown, q: unknown) =>
        typeof text === "string" && typeof q === "string" && fold(text).includes(q) ? 1 : 0,
      );
      const version = pragma(db, "user_version");
      const tables = db.prepare("SELECT count(*) AS n FROM sqlite_schema").get() as { n: number };
      if (version === 0 && tables.n === 0) {
        db.exec(SCHEMA);
        db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
      } else if (version !== SCHEMA_VERSION) {
        throw new StoreMismatch(
          `${path} is not a search index of version ${SCHEMA_VERSION} (found version ${version})`,
        );
      }
      return new SearchStore(path, db, options.candidates ?? CANDIDATES);
    } catch (err) {
      db?.close();
      const code = sqliteCode(err);
      if (code === SQLITE_BUSY || code === SQLITE_LOCKED) {
        throw new StoreBusy(
          `${path} is in use by another search service; give each its own file (${SEARCH_DB_VARIABLE})`,
        );
      }
      // Only a file that is not an index of ours is given up (and rebuilt): never one that could
      // not be read for another reason (permissions, a full disk).
      if (err instanceof StoreMismatch) throw err;
      if (code === SQLITE_NOTADB || code === SQLITE_CORRUPT) {
        throw new StoreMismatch(
          `${path} cannot be opened as a search index: ${(err as Error).message}`,
        );
      }
      throw err;
    }
  }

  /** Removes an index file and its WAL. */
  static remove(path: string): void {
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  }

  #meta(key: string): unknown {
    return (this.#s.meta.get(key) as { value: unknown } | undefined)?.value;
  }

  /** The CHAT sequence applied last (0: nothing yet). */
  get appliedSeq(): number {
    return this.#applied;
  }

  get stream(): StreamIdentity | undefined {
    const name = this.#meta("stream");
    const created = this.#meta("created");
    return typeof name === "string" && typeof created === "string" ? { name, created } : undefined;
  }

  /** Records the stream an empty index is about to be built from. */
  setStream(identity: StreamIdentity): void {
    this.#s.setMeta.run("stream", identity.name);
    this.#s.setMeta.run("created", identity.created);
  }

  #threadKey(name: string): { key: number; deleted: boolean; count: number } {
    const row = this.#s.thread.get(name) as
      { key: number; count: number; deleted: number } | undefined;
    if (row) return { key: row.key, count: row.count, deleted: row.deleted === 1 };
    const added = this.#s.addThread.get(name) as { key: number };
    return { key: added.key, count: 0, deleted: false };
  }

  #erase(key: number): void {
    this.#s.eraseText.run({ key });
    this.#s.eraseGrams.run({ key });
    this.#s.eraseMessages.run({ key });
    this.#s.tombstone.run(key);
  }

  /**
   * Applies CHAT events in stream order and moves the applied sequence to `throughSeq`, all in
   * one transaction. Events at or below the applied sequence are skipped (a redelivery).
   */
  apply(events: readonly IndexEvent[], throughSeq: number): ApplyCounts {
    const counts: ApplyCounts = { indexed: 0, duplicates: 0, deleted: 0 };
    transaction(this.#db, () => {
      for (const event of events) {
        if (event.seq <= this.#applied || event.kind === "other") continue;
        const thread = this.#threadKey(event.thread);
        if (thread.deleted) continue;
        if (event.kind === "deleted") {
          this.#erase(thread.key);
          counts.deleted += 1;
          continue;
        }
        const m = event.message;
        const text = searchableText(m) ?? null;
        const row = { key: thread.key, position: thread.count };
        const added = this.#s.addMessage.run({ ...row, mid: m.id, at: m.at, sender: m.from, text });
        if (added.changes === 0) {
          counts.duplicates += 1;
          continue;
        }
        if (text !== null) {
          this.#s.addText.run({ ...row, text });
          const grams = denseGrams(text);
          if (grams !== "") this.#s.addGrams.run({ ...row, text: grams });
        }
        this.#s.counted.run(thread.key);
        counts.indexed += 1;
      }
      const through = Math.max(this.#applied, throughSeq);
      this.#s.setMeta.run("seq", through);
      this.#applied = through;
    });
    return counts;
  }

  /**
   * Erases threads whose messages are gone from CHAT (a thread.deleted the worker erased before
   * this index read it) and marks them deleted, as the worker does. `only`: that thread alone
   * is looked at. Returns the threads erased.
   */
  eraseGone(present: ReadonlySet<string>, only?: string): string[] {
    const candidates =
      only !== undefined
        ? this.count(only) > 0
          ? [only]
          : []
        : (this.#s.live.all() as { name: string }[]).map((r) => r.name);
    const gone = candidates.filter((name) => !present.has(name));
    if (gone.length === 0) return gone;
    transaction(this.#db, () => {
      for (const name of gone) this.#erase(this.#threadKey(name).key);
    });
    return gone;
  }

  /** Messages indexed for a live thread (skipped echoes included); 0 for unknown or deleted. */
  count(thread: string): number {
    const row = this.#s.thread.get(thread) as { count: number; deleted: number } | undefined;
    return row && row.deleted === 0 ? row.count : 0;
  }

  /** Rows of any kind kept for a thread: none once it is deleted. */
  rowsOf(thread: string): number {
    const row = this.#s.thread.get(thread) as { key: number } | undefined;
    if (!row) return 0;
    const n = this.#db
      .prepare(
        "SELECT (SELECT count(*) FROM messages WHERE id BETWEEN (@key << 32) AND (@key << 32) | 4294967295) + (SELECT count(*) FROM fts WHERE rowid BETWEEN (@key << 32) AND (@key << 32) | 4294967295) + (SELECT count(*) FROM grams WHERE rowid BETWEEN (@key << 32) AND (@key << 32) | 4294967295) AS n",
      )
      .get({ key: row.key }) as { n: number };
    return n.n;
  }

  totals(): { threads: number; messages: number } {
    const { threads, messages } = this.#s.totals.get() as { threads: number; messages: number };
    return { threads, messages };
  }

  /**
   * The thread's messages below position `before` that match, newest first, at most `limit`.
   * Trigram and gram queries are exact and complete; a scan reads at most SCAN_ROWS messages
   * per page, so it may return fewer than `limit` with more to read before `before`.
   */
  search(thread: string, plan: QueryPlan, before: number, limit: number): HitPage {
    const row = this.#s.thread.get(thread) as
      { key: number; count: number; deleted: number } | undefined;
    const top = Math.min(before, row?.count ?? 0);
    if (!row || row.deleted === 1 || top <= 0) return { hits: [], before: null };
    if (plan.kind === "scan") {
      const from = Math.max(0, top - SCAN_ROWS);
      const rows = this.#s.scan.all({
        key: row.key,
        from,
        top: top - 1,
        folded: plan.folded,
        limit,
      }) as Row[];
      const hits = rows.map(asHit);
      const last = hits.at(-1);
      if (hits.length === limit && last) return { hits, before: last.position };
      return { hits, before: from > 0 ? from : null };
    }
    const range = { key: row.key, top: top - 1 };
    let rows: Row[] | undefined;
    if (plan.kind === "trigram" && plan.words) {
      const cap = this.#candidates;
      const positions = this.#s.candidates
        .all({ ...range, match: plan.words.match, cap })
        .map((r) => (r as { position: number }).position);
      // All the messages holding the words: the phrase is among them.
      // Fewer than `cap` rows, checked here: node:sqlite's call into a JS function per row
      // (folded_has) costs more than folding them after one read.
      if (positions.length < cap) {
        const folded = plan.words.folded;
        const all = this.#s.checked.all({
          key: row.key,
          positions: JSON.stringify(positions),
        }) as Row[];
        rows = all.filter((r) => fold(r.text).includes(folded)).slice(0, limit + 1);
      }
    }
    rows ??= (plan.kind === "trigram" ? this.#s.trigram : this.#s.grams).all({
      ...range,
      match: plan.match,
      limit: limit + 1,
    }) as Row[];
    const more = rows.length > limit;
    const hits = (more ? rows.slice(0, limit) : rows).map(asHit);
    return { hits, before: more ? (hits.at(-1)?.position ?? null) : null };
  }

  /** Merges some of the FTS index's segments (idle work: fewer segments, faster queries). */
  merge(pages = 200): void {
    this.#s.merge.run(pages);
  }

  /** Bytes of the file and its WAL. */
  bytes(): number {
    return pragma(this.#db, "page_size") * pragma(this.#db, "page_count");
  }

  /** Writes the WAL back into the file (before the file is measured or renamed). */
  checkpoint(): void {
    this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}
