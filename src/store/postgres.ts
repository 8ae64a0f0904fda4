// Owns the Responses store in PostgreSQL (`--store-url postgres://...`): one table shared by every replica
// behind a load balancer, so a response stored by one is continued by another. Same contract and retention
// as the SQLite store (store_test.ts runs one suite on both). Client: `postgres` (porsager/postgres, pure
// JavaScript, pooled, parameterized queries).
import postgres from "postgres";
import type { ResponseStore, Retention, StoredResponse } from "./types.ts";

export class PostgresStore implements ResponseStore {
  readonly description: string;

  private constructor(readonly sql: postgres.Sql, url: URL, readonly retention: Retention) {
    this.description = `postgres ${url.hostname}:${url.port || 5432}${url.pathname}`;
  }

  static async open(url: string, retention: Retention): Promise<PostgresStore> {
    const sql = postgres(url, { max: 4, onnotice: () => {} });
    await sql`
      CREATE TABLE IF NOT EXISTS oai_responses (
        id TEXT PRIMARY KEY,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        previous_id TEXT,
        bytes BIGINT NOT NULL,
        input JSONB NOT NULL,
        response JSONB NOT NULL
      )`;
    await sql`CREATE INDEX IF NOT EXISTS oai_responses_expires ON oai_responses (expires_at)`;
    await sql`CREATE INDEX IF NOT EXISTS oai_responses_created ON oai_responses (created_at, id)`;
    return new PostgresStore(sql, new URL(url), retention);
  }

  async put(r: StoredResponse): Promise<void> {
    const input = JSON.stringify(r.input);
    const response = JSON.stringify(r.response);
    const now = Math.floor(Date.now() / 1000);
    await this.sql`
      INSERT INTO oai_responses (id, created_at, expires_at, previous_id, bytes, input, response)
      VALUES (${r.id}, ${r.createdAt}, ${r.createdAt + this.retention.ttlSeconds}, ${r.previousResponseId},
              ${input.length + response.length}, ${this.sql.json(r.input as never)},
              ${this.sql.json(r.response as never)})
      ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
        previous_id = EXCLUDED.previous_id, bytes = EXCLUDED.bytes, input = EXCLUDED.input,
        response = EXCLUDED.response`;
    await this.sql`DELETE FROM oai_responses WHERE expires_at <= ${now}`;
    // Oldest first, until what is left fits.
    await this.sql`
      DELETE FROM oai_responses WHERE id IN (
        SELECT id FROM (
          SELECT id, SUM(bytes) OVER (ORDER BY created_at DESC, id DESC) AS kept FROM oai_responses
        ) ranked WHERE kept > ${this.retention.maxBytes}
      )`;
  }

  async get(id: string): Promise<StoredResponse | null> {
    const now = Math.floor(Date.now() / 1000);
    const rows = await this.sql<
      { id: string; created_at: string; previous_id: string | null; input: string; response: string }[]
    >`
      SELECT id, created_at, previous_id, input::text AS input, response::text AS response
      FROM oai_responses WHERE id = ${id} AND expires_at > ${now}`;
    const row = rows[0];
    if (!row) return null;
    return {
      id: row.id,
      createdAt: Number(row.created_at),
      previousResponseId: row.previous_id,
      input: JSON.parse(row.input),
      response: JSON.parse(row.response),
    };
  }

  async delete(id: string): Promise<boolean> {
    const res = await this.sql`DELETE FROM oai_responses WHERE id = ${id}`;
    return res.count > 0;
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }
}
