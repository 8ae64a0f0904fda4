// Owns the contract of the Responses store (issue 14): stored responses kept by id, with the request's own
// input items and the chain link to the previous response, so `previous_response_id` can rebuild a
// conversation. Records hold wire JSON (what GET /v1/responses/{id} answers); only src/api/responses.ts reads
// them. Two implementations pass one test suite: SQLite (sqlite.ts, the default) and PostgreSQL (postgres.ts).

export interface StoredResponse {
  id: string;
  /** Unix seconds. */
  createdAt: number;
  previousResponseId: string | null;
  /** The request's own input items, each with its id, as GET .../input_items lists them. */
  input: Record<string, unknown>[];
  /** The response object as answered. */
  response: Record<string, unknown>;
}

export interface ResponseStore {
  /** Where it keeps its records, for the start-up log (never a password). */
  readonly description: string;
  /** Adds or replaces a record, then drops what is past its time or beyond the size cap (oldest first). */
  put(record: StoredResponse): Promise<void>;
  /** The record, or null when there is none (never stored, deleted, or expired). */
  get(id: string): Promise<StoredResponse | null>;
  /** Whether a record was there to delete. */
  delete(id: string): Promise<boolean>;
  close(): Promise<void>;
}

/** How long records live and how much they may take in all. */
export interface Retention {
  ttlSeconds: number;
  maxBytes: number;
}
