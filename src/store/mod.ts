// Owns choosing the Responses store from the configuration: SQLite in the data folder by default, a SQLite
// file (`sqlite:<file>`), PostgreSQL (`postgres://...`, shared by replicas), or none (`none`: nothing is
// stored; `store: true` requests are answered but cannot be retrieved or continued).
import { join } from "node:path";
import type { ResponseStore, Retention } from "./types.ts";
import { SqliteStore } from "./sqlite.ts";

export type { ResponseStore, Retention, StoredResponse } from "./types.ts";

export interface StoreConfig {
  dataDir: string;
  storeUrl: string;
  storeTtlSeconds: number;
  storeMaxBytes: number;
}

export async function openStore(c: StoreConfig): Promise<ResponseStore | null> {
  const retention: Retention = { ttlSeconds: c.storeTtlSeconds, maxBytes: c.storeMaxBytes };
  const url = c.storeUrl.trim();
  if (url === "none") return null;
  if (url === "") return await SqliteStore.open(join(c.dataDir, "responses.sqlite"), retention);
  if (url.startsWith("sqlite:")) return await SqliteStore.open(url.slice("sqlite:".length), retention);
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { PostgresStore } = await import("./postgres.ts");
    return await PostgresStore.open(url, retention);
  }
  throw new Error(`--store-url: expected sqlite:<file>, postgres://..., or none, but got '${url}'`);
}
