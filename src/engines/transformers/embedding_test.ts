// Runs the real engine on the generated embed-tiny model (models/generated/embed-tiny).
import assert from "node:assert/strict";
import { join } from "node:path";
import { memoryLogger } from "../../log.ts";
import { ModelFilesMissing } from "../../errors.ts";
import type { LoadContext, ModelEntry } from "../types.ts";
import { loadEmbedding } from "./embedding.ts";
import { ensureEmbeddingFiles, localDir, maxTokensOf, readPooling } from "./embedding_files.ts";
import { transformersRuntime } from "./runtime.ts";
import { startFakeHub } from "../../../tests/fake_hub.ts";

const MODELS = new URL("../../../models/", import.meta.url).pathname;
const TINY = join(MODELS, "generated", "embed-tiny");

function entry(path: string, extra: Partial<ModelEntry> = {}): ModelEntry {
  return {
    id: "embed-tiny",
    task: "embedding",
    engine: "transformers",
    path,
    dtype: "fp32",
    device: "cpu",
    options: {},
    created: 0,
    ownedBy: "test",
    ...extra,
  };
}

const ctx = (allowRemote = false): LoadContext => ({
  modelsDir: MODELS,
  threads: 1,
  allowRemote,
  log: memoryLogger(),
});

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

/** A copy of embed-tiny that a test may change. */
async function tinyCopy(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "embed-tiny-" });
  const copy = async (from: string, to: string) => {
    for await (const e of Deno.readDir(from)) {
      if (e.isDirectory) {
        await Deno.mkdir(join(to, e.name));
        await copy(join(from, e.name), join(to, e.name));
      } else await Deno.copyFile(join(from, e.name), join(to, e.name));
    }
  };
  await copy(TINY, dir);
  return dir;
}

const TEXTS = [
  "The quick brown fox jumps over the lazy dog.",
  "hello",
  "Embeddings turn text into vectors that can be compared with a dot product, even long ones like this.",
];

Deno.test("embedding engine: loads embed-tiny and matches the transformers.js pipeline", async () => {
  const engine = await loadEmbedding(entry(TINY), ctx());
  try {
    assert.equal(engine.dimensions, 32);
    assert.equal(engine.maxTokens, 128);
    assert.equal(engine.vocabSize, 2200);
    assert.equal(engine.normalized, true);
    assert.deepEqual(engine.pooling.modes, ["mean"]);
    assert.match(engine.backend, /cpu/);
    const ids = TEXTS.map((t) => engine.tokenize(t));
    assert.ok(ids.every((row) => row.length >= 3), "special tokens included");
    const vectors = await engine.embedBatch(ids);

    // Independent reference: transformers.js's own feature-extraction pipeline on the same folder.
    const { tf } = await transformersRuntime("cpu", memoryLogger());
    const extractor = await tf.pipeline("feature-extraction", TINY, {
      dtype: "fp32",
      local_files_only: true,
    });
    const ref = await extractor(TEXTS, { pooling: "mean", normalize: true });
    const data = ref.data as Float32Array;
    vectors.forEach((v, i) => {
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5);
      assert.ok(maxDiff(v, data.subarray(i * 32, (i + 1) * 32)) < 1e-5, `text ${i}`);
    });
    await extractor.dispose();

    // Padding does not change a vector: each alone equals its place in the padded batch.
    for (let i = 0; i < ids.length; i++) {
      const [alone] = await engine.embedBatch([ids[i]]);
      assert.ok(maxDiff(alone, vectors[i]) < 1e-5);
    }
    assert.ok(maxDiff(vectors[0], vectors[1]) > 1e-3, "different texts, different vectors");
  } finally {
    await engine.dispose();
  }
});

Deno.test("embedding engine: pooling follows the model folder and the manifest override", async () => {
  const dir = await tinyCopy();
  try {
    const mean = await loadEmbedding(entry(dir), ctx());
    const ids = mean.tokenize(TEXTS[0]);
    const [vMean] = await mean.embedBatch([ids]);
    await mean.dispose();

    const cls = await loadEmbedding(entry(dir, { options: { pooling: "cls" } }), ctx());
    assert.deepEqual(cls.pooling.modes, ["cls"]);
    const [vCls] = await cls.embedBatch([ids]);
    await cls.dispose();
    assert.ok(maxDiff(vMean, vCls) > 1e-3);
    assert.ok(Math.abs(Math.hypot(...vCls) - 1) < 1e-5);

    // Without the Normalize module the vectors keep their length.
    const modules = JSON.parse(await Deno.readTextFile(join(dir, "modules.json")));
    await Deno.writeTextFile(join(dir, "modules.json"), JSON.stringify(modules.slice(0, 2)));
    const raw = await loadEmbedding(entry(dir), ctx());
    assert.equal(raw.normalized, false);
    const [vRaw] = await raw.embedBatch([ids]);
    await raw.dispose();
    const norm = Math.hypot(...vRaw);
    assert.ok(Math.abs(norm - 1) > 1e-3);
    assert.ok(maxDiff(vRaw.map((x) => x / norm), vMean) < 1e-5);

    // No sentence-transformers files at all: mean pooling + L2.
    await Deno.remove(join(dir, "modules.json"));
    await Deno.remove(join(dir, "1_Pooling"), { recursive: true });
    assert.deepEqual(readPooling(dir), { modes: ["mean"], normalize: true, source: "default" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embedding engine: missing files give ModelFilesMissing saying what and how", async () => {
  const dir = await tinyCopy();
  try {
    await Deno.remove(join(dir, "onnx", "model.onnx"));
    await assert.rejects(loadEmbedding(entry(dir), ctx()), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      assert.match(e.message, /onnx\/model\.onnx/);
      assert.match(e.message, /put a transformers\.js export/);
      return true;
    });
    // A quantized dtype needs its own file.
    await assert.rejects(loadEmbedding(entry(TINY, { dtype: "fp16" }), ctx()), /onnx\/model_fp16\.onnx/);
    // A hub entry that is not downloaded, offline: names the repo and the way out.
    const hub = entry(join(dir, "hub", "Xenova", "all-MiniLM-L6-v2"), { repo: "Xenova/all-MiniLM-L6-v2" });
    await assert.rejects(loadEmbedding(hub, ctx(false)), (e: unknown) => {
      assert.ok(e instanceof ModelFilesMissing);
      assert.match(e.message, /config\.json/);
      assert.match(e.message, /without --offline/);
      assert.match(e.message, /Xenova\/all-MiniLM-L6-v2/);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("embedding engine: a hub entry downloads into <models>/hub/<repo>, pooling files included", async () => {
  const hub = await startFakeHub({ "acme/embed-tiny": { dir: TINY } });
  const models = await Deno.makeTempDir({ prefix: "embed-hub-" });
  try {
    const dir = join(models, "hub", "acme", "embed-tiny");
    const hubEntry = entry(dir, { repo: "acme/embed-tiny" });
    await assert.rejects(loadEmbedding(hubEntry, ctx(false)), ModelFilesMissing);
    const engine = await loadEmbedding(hubEntry, {
      ...ctx(true),
      modelsDir: models,
      hub: { endpoint: hub.url },
    });
    // The hub's one download path: a listing, then verified file downloads (no per-file probing).
    assert.ok(hub.requests.some((r) => r.path.startsWith("/api/models/acme/embed-tiny/revision/")));
    try {
      for (
        const f of [
          "config.json",
          "tokenizer.json",
          "onnx/model.onnx",
          "modules.json",
          "1_Pooling/config.json",
        ]
      ) {
        assert.ok(Deno.statSync(join(dir, f)).isFile, `${f} downloaded`);
      }
      assert.equal(engine.pooling.source, "sentence-transformers");
      const [v] = await engine.embedBatch([engine.tokenize(TEXTS[0])]);
      const local = await loadEmbedding(entry(TINY), ctx());
      const [w] = await local.embedBatch([local.tokenize(TEXTS[0])]);
      await local.dispose();
      assert.ok(maxDiff(v, w) < 1e-6);
    } finally {
      await engine.dispose();
    }
    // Now complete on disk: loads offline.
    await (await loadEmbedding(hubEntry, ctx(false))).dispose();
  } finally {
    await hub.close();
    await Deno.remove(models, { recursive: true });
  }
});

Deno.test("embedding files: hub layout, local folder and length limits", async () => {
  const hub = entry("/m/hub/Xenova/all-MiniLM-L6-v2", { repo: "Xenova/all-MiniLM-L6-v2" });
  assert.equal(localDir(hub), "/m/hub/Xenova/all-MiniLM-L6-v2");
  const own = entry("/m/mine", { repo: "a/b" });
  assert.equal(localDir(own), "/m/mine/a/b");
  assert.equal(await ensureEmbeddingFiles(entry(TINY), false), TINY);
  assert.equal(maxTokensOf(512, 514), 512);
  assert.equal(maxTokensOf(1e30, 128), 128);
  assert.equal(maxTokensOf(undefined, 256), 256);
  assert.equal(maxTokensOf(undefined, undefined), 512);
});
