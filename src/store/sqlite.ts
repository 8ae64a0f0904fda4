// Owns the default Responses store: one SQLite file in the data folder through Deno's built-in `node:sqlite`
// (WAL, so readers never wait on the writer). Writes are small and synchronous; they run on the HTTP thread
// like any other short I/O call. Expired records are dropped on each write, and the oldest records beyond the
// size cap.
import { DatabaseSync } from "node:sqlite";
import { dirname } from "node:path";
import type { ResponseStore, Retention, StoredResponse } from "./types.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS responses (
  id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  previous_id TEXT,
  bytes INTEGER NOT NULL,
  input TEXT NOT NULL,
  response TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_expires ON responses (expires_at);
CREATE INDEX IF NOT EXISTS responses_created ON responses (created_at, id);
`;

export class SqliteStore implements ResponseStore {
  readonly description: string;
  readonly #db: DatabaseSync;

  private constructor(readonly path: string, readonly retention: Retention) {
    this.description = `sqlite ${path}`;
    this.#db = new DatabaseSync(path);
    // Another server on the same data folder (one still shutting down while its successor starts) may hold
    // the file's lock for a moment: wait for it rather than fail the start with "database is locked".
    this.#db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    this.#db.exec(SCHEMA);
  }

  static async open(path: string, retention: Retention): Promise<SqliteStore> {
    if (path !== ":memory:") await Deno.mkdir(dirname(path), { recursive: true });
    return new SqliteStore(path, retention);
  }

  put(r: StoredResponse): Promise<void> {
    const input = JSON.stringify(r.input);
    const response = JSON.stringify(r.response);
    const now = Math.floor(Date.now() / 1000);
    this.#db.prepare(
      `INSERT OR REPLACE INTO responses (id, created_at, expires_at, previous_id, bytes, input, response)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      r.id,
      r.createdAt,
      r.createdAt + this.retention.ttlSeconds,
      r.previousResponseId,
      input.length + response.length,
      input,
      response,
    );
    this.#db.prepare("DELETE FROM responses WHERE expires_at <= ?").run(now);
    const total = Number(
      (this.#db.prepare("SELECT COALESCE(SUM(bytes), 0) AS n FROM responses").get() as { n: number }).n,
    );
    if (total > this.retention.maxBytes) {
      // Oldest first, until what is left fits.
      this.#db.prepare(
        `DELETE FROM responses WHERE id IN (
           SELECT id FROM (
             SELECT id, SUM(bytes) OVER (ORDER BY created_at DESC, id DESC) AS kept FROM responses
           ) WHERE kept > ?
         )`,
      ).run(this.retention.maxBytes);
    }
    return Promise.resolve();
  }

  get(id: string): Promise<StoredResponse | null> {
    const row = this.#db.prepare(
      "SELECT id, created_at, previous_id, input, response FROM responses WHERE id = ? AND expires_at > ?",
    ).get(id, Math.floor(Date.now() / 1000)) as
      | { id: string; created_at: number; previous_id: string | null; input: string; response: string }
      | undefined;
    if (!row) return Promise.resolve(null);
    return Promise.resolve({
      id: row.id,
      createdAt: Number(row.created_at),
      previousResponseId: row.previous_id,
      input: JSON.parse(row.input),
      response: JSON.parse(row.response),
    });
  }

  delete(id: string): Promise<boolean> {
    const res = this.#db.prepare("DELETE FROM responses WHERE id = ?").run(id);
    return Promise.resolve(Number(res.changes) > 0);
  }

  close(): Promise<void> {
    this.#db.close();
    return Promise.resolve();
  }
}
