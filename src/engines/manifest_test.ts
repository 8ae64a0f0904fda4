import assert from "node:assert/strict";
import { hubPath, ManifestError, parseManifest } from "./manifest.ts";

const base = {
  defaults: { chat: "c", embedding: "e" },
  aliases: { "gpt-4o-mini": "@chat", "text-embedding-3-small": "@embedding", "whisper-1": "@transcription" },
  models: {
    c: { task: "chat", repo: "org/Chat-1" },
    e: { task: "embedding", path: "local/e", device: "cpu" },
  },
};

Deno.test("manifest: entries, hub paths, aliases through task defaults", () => {
  const m = parseManifest(base, "/models", "auto");
  assert.equal(m.entries.get("c")!.path, hubPath("/models", "org/Chat-1"));
  assert.equal(m.entries.get("c")!.path, "/models/hub/org/Chat-1");
  assert.equal(m.entries.get("e")!.path, "/models/local/e");
  assert.equal(m.entries.get("e")!.device, "cpu");
  assert.equal(m.aliases.get("gpt-4o-mini"), "c");
  assert.equal(m.aliases.get("text-embedding-3-small"), "e");
  // No transcription default: the alias is simply absent.
  assert.equal(m.aliases.has("whisper-1"), false);
  // The server-wide device flag wins unless it is auto.
  assert.equal(parseManifest(base, "/models", "webgpu").entries.get("e")!.device, "webgpu");
});

Deno.test("manifest: no model may point outside the models folder", () => {
  for (const bad of ["../etc", "/etc/passwd", "a/../../b", "."]) {
    const json = { models: { x: { task: "chat", path: bad } } };
    assert.throws(() => parseManifest(json, "/models", "auto"), ManifestError, bad);
  }
  for (const repo of ["../x", "a/..", "a/b/c", "/a/b"]) {
    const json = { models: { x: { task: "chat", repo } } };
    assert.throws(() => parseManifest(json, "/models", "auto"), ManifestError, repo);
  }
});

Deno.test("manifest: options.model_file_name is a base name inside the model's onnx folder", () => {
  for (const bad of ["../../etc/passwd", "a/b", "..", "/abs", "", 7]) {
    const json = { models: { x: { task: "embedding", path: "a", options: { model_file_name: bad } } } };
    assert.throws(() => parseManifest(json, "/models", "auto"), /models\.x\.options\.model_file_name/);
  }
  for (const good of ["model_O2", "decoder_model_merged", "model.v2"]) {
    const json = { models: { x: { task: "chat", path: "a", options: { model_file_name: good } } } };
    assert.equal(parseManifest(json, "/models", "auto").entries.get("x")!.options.model_file_name, good);
  }
});

Deno.test("manifest: bad shapes name the field", () => {
  assert.throws(
    () => parseManifest({ models: { x: { task: "dance", path: "a" } } }, "/m", "auto"),
    /models\.x\.task/,
  );
  assert.throws(
    () => parseManifest({ defaults: { chat: "e" }, models: base.models }, "/m", "auto"),
    /defaults\.chat: "e" is a embedding model/,
  );
  assert.throws(
    () => parseManifest({ aliases: { c: "e" }, models: base.models }, "/m", "auto"),
    /shadows/,
  );
});

Deno.test("manifest: options.batch_size is an integer from 32 to 65536, for llama.cpp models only", () => {
  for (const bad of [0, 31, 512.5, "512", 70000]) {
    const json = { models: { x: { task: "chat", path: "a.gguf", options: { batch_size: bad } } } };
    assert.throws(() => parseManifest(json, "/models", "auto"), /models\.x\.options\.batch_size/);
  }
  const json = { models: { x: { task: "chat", path: "a.gguf", options: { batch_size: 512 } } } };
  assert.equal(parseManifest(json, "/models", "auto").entries.get("x")!.options.batch_size, 512);
  const onnx = { models: { x: { task: "chat", path: "onnx-folder", options: { batch_size: 512 } } } };
  assert.throws(() => parseManifest(onnx, "/models", "auto"), /batch_size/);
});

Deno.test("manifest: options.mmap is a boolean, for llama.cpp models only", () => {
  for (const bad of [1, "true", null]) {
    const json = { models: { x: { task: "chat", path: "a.gguf", options: { mmap: bad } } } };
    assert.throws(() => parseManifest(json, "/models", "auto"), /models\.x\.options\.mmap/);
  }
  const json = { models: { x: { task: "chat", path: "a.gguf", options: { mmap: false } } } };
  assert.equal(parseManifest(json, "/models", "auto").entries.get("x")!.options.mmap, false);
  const onnx = { models: { x: { task: "chat", path: "onnx-folder", options: { mmap: true } } } };
  assert.throws(() => parseManifest(onnx, "/models", "auto"), /mmap/);
});

Deno.test("manifest: options.gpu_layers is an integer of at least -1", () => {
  for (const bad of [-2, 1.5, "all", true]) {
    const json = { models: { x: { task: "chat", path: "a.gguf", options: { gpu_layers: bad } } } };
    assert.throws(() => parseManifest(json, "/models", "auto"), /models\.x\.options\.gpu_layers/);
  }
  for (const good of [-1, 0, 99]) {
    const json = { models: { x: { task: "chat", path: "a.gguf", options: { gpu_layers: good } } } };
    assert.equal(parseManifest(json, "/models", "auto").entries.get("x")!.options.gpu_layers, good);
  }
});

Deno.test("manifest: options.gpu_layers is refused where there are no layers to place", () => {
  const json = { models: { w: { task: "transcription", path: "w", options: { gpu_layers: 4 } } } };
  assert.throws(
    () => parseManifest(json, "/models", "auto"),
    /models\.w\.options\.gpu_layers: only llama\.cpp/,
  );
});
