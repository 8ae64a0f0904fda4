// The loader's first use of a hub model: downloaded into <models>/hub/<repo> from the hub (a local fake in the
// hub's URL layout), then loaded; offline, the missing file's error says how to get it.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { startFakeHub } from "../../../tests/fake_hub.ts";
import { hubPath } from "../manifest.ts";
import { ModelFilesMissing } from "../../errors.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { whisperLoader } from "./mod.ts";

const GENERATED = fileURLToPath(new URL("../../../models/generated/whisper-tiny-test/", import.meta.url));
const silent = { debug() {}, info() {}, warn() {}, error() {} };

Deno.test("whisper loader: a hub model downloads on first use, and offline says how to get it", async () => {
  const hub = await startFakeHub({ "ggerganov/whisper.cpp": { dir: GENERATED } });
  const models = await Deno.makeTempDir({ prefix: "whisper-hub-" });
  const before = Deno.env.get("HF_ENDPOINT");
  Deno.env.set("HF_ENDPOINT", hub.url);
  const entry: ModelEntry = {
    id: "whisper-test",
    task: "transcription",
    engine: "whisper.cpp",
    repo: "ggerganov/whisper.cpp",
    path: hubPath(models, "ggerganov/whisper.cpp"),
    device: "cpu",
    options: { file: "ggml-model.bin" },
    created: 0,
    ownedBy: "test",
  };
  const ctx = (allowRemote: boolean): LoadContext => ({
    modelsDir: models,
    threads: 1,
    allowRemote,
    log: silent,
  });
  try {
    await assert.rejects(whisperLoader()(entry, ctx(false)), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      assert.match(e.message, /deno task pull whisper-test/);
      return true;
    });
    const engine = await whisperLoader()(entry, ctx(true));
    try {
      const got = await Deno.readFile(join(entry.path, "ggml-model.bin"));
      const want = await Deno.readFile(join(GENERATED, "ggml-model.bin"));
      assert.equal(got.length, want.length);
      assert.ok(hub.requests.some((r) => r.path.includes("ggml-model.bin")), "fetched from the hub");
    } finally {
      await engine.dispose();
    }
  } finally {
    if (before === undefined) Deno.env.delete("HF_ENDPOINT");
    else Deno.env.set("HF_ENDPOINT", before);
    await hub.close();
    await Deno.remove(models, { recursive: true });
  }
});
