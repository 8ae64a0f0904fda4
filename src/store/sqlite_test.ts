import assert from "node:assert/strict";
import { join } from "node:path";
import { SqliteStore } from "./sqlite.ts";

Deno.test("sqlite store: opening waits while another process holds the file's lock, instead of failing", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "responses.sqlite");
  // Another process takes the lock, says so, and keeps it for 400 ms.
  const holder = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { DatabaseSync } from "node:sqlite";
       const db = new DatabaseSync(${JSON.stringify(path)});
       db.exec("BEGIN EXCLUSIVE; CREATE TABLE t (x);");
       console.log("locked");
       await new Promise((r) => setTimeout(r, 400));
       db.exec("COMMIT"); db.close();`,
    ],
    stdout: "piped",
  }).spawn();
  const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("locked")) out += (await reader.read()).value ?? "";
  const store = await SqliteStore.open(path, { ttlSeconds: 0, maxBytes: 0 });
  await store.close();
  reader.releaseLock();
  await holder.stdout.cancel().catch(() => {});
  assert.ok((await holder.status).success);
  await Deno.remove(dir, { recursive: true });
});
