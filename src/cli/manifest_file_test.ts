import assert from "node:assert/strict";
import { join } from "node:path";
import { aliasTarget, ManifestFileError, readManifestDoc, writeManifestDoc } from "./manifest_file.ts";

Deno.test("manifest file: a missing file starts empty; a written one is tidy JSON that the server accepts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "sub", "manifest.json");
    const { doc, existed } = await readManifestDoc(path);
    assert.equal(existed, false);
    assert.deepEqual(doc, { defaults: {}, aliases: {}, models: {} });
    doc.models.a = { task: "chat", repo: "o/a" };
    await writeManifestDoc(path, doc, dir);
    const text = await Deno.readTextFile(path);
    assert.equal(text, JSON.stringify(doc, null, 2) + "\n");
    assert.deepEqual([...Deno.readDirSync(join(dir, "sub"))].map((e) => e.name), ["manifest.json"]);

    // Something the server would refuse is never written.
    doc.models.b = { task: "chat", path: "../outside" };
    await assert.rejects(
      () => writeManifestDoc(path, doc, dir),
      ManifestFileError,
      "outside the models folder",
    );
    assert.equal(await Deno.readTextFile(path), text);

    await Deno.writeTextFile(path, "{nope");
    await assert.rejects(() => readManifestDoc(path), ManifestFileError, "is not JSON");
    await Deno.writeTextFile(path, "[]");
    await assert.rejects(() => readManifestDoc(path), ManifestFileError, "not a JSON object");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("manifest file: aliases resolve directly and through task defaults", () => {
  const doc = {
    defaults: { chat: "c" },
    aliases: { "gpt-4o": "@chat", "whisper-1": "@transcription", "fixed": "c" },
    models: { c: { task: "chat", repo: "o/c" } },
  };
  assert.equal(aliasTarget(doc, "gpt-4o"), "c");
  assert.equal(aliasTarget(doc, "fixed"), "c");
  assert.equal(aliasTarget(doc, "whisper-1"), undefined);
  assert.equal(aliasTarget(doc, "c"), undefined);
});
