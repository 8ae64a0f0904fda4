import assert from "node:assert/strict";
import { ENGINE_KINDS, TASKS } from "../model_kinds.ts";
import { BACKENDS } from "./backends.ts";
import { defaultEngine, parseManifest } from "./manifest.ts";

Deno.test("backends: one descriptor per engine kind, every task served, claims decide the default engine", () => {
  assert.deepEqual(BACKENDS.map((b) => b.kind).sort(), [...ENGINE_KINDS].sort());
  for (const task of TASKS) assert.ok(BACKENDS.some((b) => b.tasks.includes(task)), task);
  assert.equal(defaultEngine("chat", "m.gguf"), "llama.cpp");
  assert.equal(defaultEngine("embedding", "folder"), "transformers");
  assert.equal(defaultEngine("transcription", "ggml-tiny.bin"), "whisper.cpp");
  // Each backend's hub layout names it.
  for (const b of BACKENDS) assert.equal(b.pullFormat.engine, b.kind);
});

Deno.test("backends: an option another backend acts on is refused, never ignored", () => {
  const parse = (spec: Record<string, unknown>) =>
    parseManifest({ models: { m: { task: "chat", path: "m", ...spec } } }, "/models", "cpu");
  assert.throws(() => parse({ options: { gpu_layers: 4 } }), /gpu_layers: only llama.cpp/);
  assert.throws(() => parse({ path: "m.gguf", options: { ort_spinning: true } }), /only transformers models/);
  assert.throws(() => parse({ options: { beam_size: 2 } }), /only whisper\.cpp models/);
  assert.equal(parse({ path: "m.gguf", options: { gpu_layers: 4 } }).entries.get("m")!.engine, "llama.cpp");
  assert.equal(parse({ path: "m.gguf", options: { context_length: 4096 } }).entries.size, 1);
  assert.throws(
    () =>
      parseManifest({ models: { m: { task: "chat", engine: "whisper.cpp", path: "m" } } }, "/models", "cpu"),
    /whisper\.cpp does not serve chat models/,
  );
});
