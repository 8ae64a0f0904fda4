// One suite for every Responses store: put/get/delete round trips, TTL expiry, the size cap dropping the
// oldest first, and records surviving a reopen. It runs on SQLite (a temp file) and on PostgreSQL against
// the server CI starts (OAI_TEST_PG_URL, set by .ci/run; reported as ignored where no server is given).
import assert from "node:assert/strict";
import { join } from "node:path";
import { openStore, type ResponseStore, type StoredResponse } from "./mod.ts";

const PG_URL = Deno.env.get("OAI_TEST_PG_URL") ?? "";

function record(id: string, createdAt: number, size = 10, previous: string | null = null): StoredResponse {
  return {
    id,
    createdAt,
    previousResponseId: previous,
    input: [{ id: `msg_${id}`, type: "message", role: "user", content: [{ type: "input_text", text: "x" }] }],
    response: { id, object: "response", output: [{ type: "message", text: "y".repeat(size) }] },
  };
}

type Open = (ttl: number, maxBytes: number) => Promise<ResponseStore>;

async function suite(t: Deno.TestContext, open: Open) {
  const now = Math.floor(Date.now() / 1000);
  await t.step("put, get, replace, delete", async () => {
    const s = await open(3600, 1e9);
    try {
      const r = record(`resp_a${now}`, now, 10, "resp_prev");
      await s.put(r);
      assert.deepEqual(await s.get(r.id), r);
      const changed = { ...r, response: { ...r.response, status: "completed" } };
      await s.put(changed);
      assert.deepEqual(await s.get(r.id), changed);
      assert.equal(await s.delete(r.id), true);
      assert.equal(await s.get(r.id), null);
      assert.equal(await s.delete(r.id), false);
      assert.equal(await s.get("resp_never"), null);
    } finally {
      await s.close();
    }
  });
  await t.step("records past their TTL are gone", async () => {
    const s = await open(60, 1e9);
    try {
      await s.put(record(`resp_old${now}`, now - 120));
      await s.put(record(`resp_new${now}`, now));
      assert.equal(await s.get(`resp_old${now}`), null);
      assert.ok(await s.get(`resp_new${now}`));
    } finally {
      await s.close();
    }
  });
  await t.step("beyond the size cap the oldest go first; records survive a reopen", async () => {
    const one = JSON.stringify(record("resp_c0", now, 1000).response).length + 200;
    const s = await open(3600, one * 3);
    const ids = [0, 1, 2, 3, 4].map((i) => `resp_c${i}_${now}`);
    try {
      for (const [i, id] of ids.entries()) await s.put(record(id, now + i, 1000));
    } finally {
      await s.close();
    }
    const again = await open(3600, one * 3);
    try {
      const kept = [];
      for (const id of ids) kept.push((await again.get(id)) !== null);
      assert.deepEqual(kept, [false, false, true, true, true]);
    } finally {
      for (const id of ids) await again.delete(id);
      await again.close();
    }
  });
}

Deno.test("response store: SQLite", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    await suite(t, async (ttl, max) =>
      (await openStore({
        dataDir: dir,
        storeUrl: `sqlite:${join(dir, "s.sqlite")}`,
        storeTtlSeconds: ttl,
        storeMaxBytes: max,
      }))!);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "response store: PostgreSQL (OAI_TEST_PG_URL)",
  ignore: !PG_URL,
  fn: async (t) => {
    await suite(
      t,
      async (ttl, max) =>
        (await openStore({ dataDir: "", storeUrl: PG_URL, storeTtlSeconds: ttl, storeMaxBytes: max }))!,
    );
  },
});

Deno.test("response store: none stores nothing; a bad URL is refused", async () => {
  assert.equal(
    await openStore({ dataDir: "", storeUrl: "none", storeTtlSeconds: 1, storeMaxBytes: 1 }),
    null,
  );
  await assert.rejects(
    openStore({ dataDir: "", storeUrl: "mysql://x", storeTtlSeconds: 1, storeMaxBytes: 1 }),
    /--store-url/,
  );
});
