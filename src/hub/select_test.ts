import assert from "node:assert/strict";
import {
  availableDtypes,
  GGUF_FORMAT,
  ONNX_FORMAT,
  onnxWeight,
  planPull as planWith,
  type PullWish,
  WHISPER_FORMAT,
} from "./select.ts";

/** The built-in backends' layouts, in their order (src/engines/backends.ts). */
const planPull = (info: RepoInfo, wish: PullWish) =>
  planWith(info, wish, [WHISPER_FORMAT, GGUF_FORMAT, ONNX_FORMAT]);
import { HubError } from "./errors.ts";
import type { HubFile, RepoInfo } from "./client.ts";

const f = (path: string, size = 10): HubFile => ({ path, size });

function repo(paths: string[], pipelineTag?: string): RepoInfo {
  return { repo: "org/model", sha: "a".repeat(40), pipelineTag, files: paths.map((p) => f(p)) };
}

Deno.test("select: GGUF repos give one .gguf file: the one named, else the preferred quant", () => {
  const files = ["README.md", "m-q2_k.gguf", "m-q8_0.gguf", "m-q4_k_m.gguf", "m-f16-00001-of-00002.gguf"];
  const plan = planPull(repo(files, "text-generation"), {});
  assert.equal(plan.kind, "gguf");
  assert.equal(plan.task, "chat");
  assert.equal(plan.file, "m-q4_k_m.gguf");
  assert.deepEqual(plan.files.map((x) => x.path), ["m-q4_k_m.gguf"]);
  assert.equal(planPull(repo(files), { file: "m-q8_0.gguf" }).file, "m-q8_0.gguf");
  assert.throws(() => planPull(repo(files), { file: "nope.gguf" }), /has no nope\.gguf/);
  assert.throws(() => planPull(repo(["a.gguf", "b.gguf"]), {}), /choose one with --file/);
  assert.throws(() => planPull(repo(files), { task: "transcription" }), HubError);
});

const TRANSFORMERS_REPO = [
  ".gitattributes",
  "README.md",
  "config.json",
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "vocab.txt",
  "chat_template.jinja",
  "1_Pooling/config.json",
  "model.safetensors",
  "pytorch_model.bin",
  "onnx/model.onnx",
  "onnx/model_quantized.onnx",
  "onnx/model_q4.onnx",
  "onnx/model_q4.onnx_data",
  "onnx/model_q4.onnx_data_1",
  "onnx/model_q4f16.onnx",
  "onnx/model_fp16.onnx",
  "onnx/model_fp16.onnx_data",
  "openvino/openvino_model.xml",
  "images/diagram.png",
];
const SIDE = [
  "config.json",
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "vocab.txt",
  "chat_template.jinja",
  "1_Pooling/config.json",
];

Deno.test("select: onnx file names map to transformers.js dtypes", () => {
  assert.deepEqual(onnxWeight("onnx/model.onnx"), { base: "model", dtype: "fp32" });
  assert.deepEqual(onnxWeight("onnx/model_quantized.onnx"), { base: "model", dtype: "q8" });
  assert.deepEqual(onnxWeight("onnx/model_q4f16.onnx"), { base: "model", dtype: "q4f16" });
  assert.deepEqual(onnxWeight("onnx/model_q4.onnx"), { base: "model", dtype: "q4" });
  assert.deepEqual(onnxWeight("onnx/model_uint8.onnx"), { base: "model", dtype: "uint8" });
  assert.deepEqual(onnxWeight("onnx/decoder_model_merged_fp16.onnx"), {
    base: "decoder_model_merged",
    dtype: "fp16",
  });
  assert.equal(onnxWeight("onnx/model.onnx_data"), undefined);
  assert.equal(onnxWeight("model.onnx"), undefined);
  assert.deepEqual(availableDtypes(repo(TRANSFORMERS_REPO).files), ["fp32", "fp16", "q8", "q4", "q4f16"]);
});

Deno.test("select: one dtype's weights with their external data, plus config and tokenizer files", () => {
  const plan = planPull(repo(TRANSFORMERS_REPO, "text-generation"), { dtype: "q4" });
  assert.equal(plan.kind, "transformers");
  assert.equal(plan.task, "chat");
  assert.equal(plan.dtype, "q4");
  assert.deepEqual(
    plan.files.map((x) => x.path).sort(),
    [
      ...SIDE,
      "onnx/model_q4.onnx",
      "onnx/model_q4.onnx_data",
      "onnx/model_q4.onnx_data_1",
    ].sort(),
  );
  const fp32 = planPull(repo(TRANSFORMERS_REPO), { task: "embedding", dtype: "fp32" });
  assert.deepEqual(fp32.files.filter((x) => x.path.startsWith("onnx/")).map((x) => x.path), [
    "onnx/model.onnx",
  ]);
  const q8 = planPull(repo(TRANSFORMERS_REPO), { task: "embedding", dtype: "q8" });
  assert.deepEqual(q8.files.filter((x) => x.path.startsWith("onnx/")).map((x) => x.path), [
    "onnx/model_quantized.onnx",
  ]);
});

Deno.test("select: default dtype by task, task from the hub's pipeline tag", () => {
  assert.equal(planPull(repo(TRANSFORMERS_REPO, "text-generation"), {}).dtype, "q4");
  assert.equal(planPull(repo(TRANSFORMERS_REPO, "feature-extraction"), {}).dtype, "fp32");
  assert.equal(planPull(repo(TRANSFORMERS_REPO, "sentence-similarity"), {}).task, "embedding");
  // Only what exists is chosen.
  const q8only = planPull(repo(["config.json", "onnx/model_quantized.onnx"], "feature-extraction"), {});
  assert.equal(q8only.dtype, "q8");
});

Deno.test("select: errors say what is available", () => {
  assert.throws(() => planPull(repo(TRANSFORMERS_REPO, "text-generation"), { dtype: "bnb4" }), (e: Error) => {
    assert.ok(e instanceof HubError);
    assert.match(e.message, /no bnb4 weights; available: fp32, fp16, q8, q4, q4f16/);
    return true;
  });
  assert.throws(() => planPull(repo(TRANSFORMERS_REPO), { task: "chat", dtype: "q3" }), /unknown dtype "q3"/);
  assert.throws(() => planPull(repo(TRANSFORMERS_REPO), {}), /--task chat or --task embedding/);
  assert.throws(() => planPull(repo(["README.md", "model.safetensors"]), {}), /neither ONNX weights/);
  assert.throws(() => planPull(repo(["onnx/model.onnx"], "feature-extraction"), {}), /no config.json/);
});

Deno.test("select: encoder-decoder repos take every session of the dtype", () => {
  const plan = planPull(
    repo([
      "config.json",
      "onnx/encoder_model.onnx",
      "onnx/encoder_model_q4.onnx",
      "onnx/decoder_model_merged_q4.onnx",
      "onnx/decoder_model_merged.onnx",
    ]),
    { task: "chat", dtype: "q4" },
  );
  assert.deepEqual(plan.files.map((x) => x.path), [
    "config.json",
    "onnx/encoder_model_q4.onnx",
    "onnx/decoder_model_merged_q4.onnx",
  ]);
});

Deno.test("select: whisper.cpp repos take one ggml file", () => {
  const whisper = repo(["README.md", "ggml-base.en.bin", "ggml-tiny.bin", "ggml-base-encoder.mlmodelc.zip"]);
  assert.throws(
    () => planPull(whisper, {}),
    /2 ggml files: choose one with --file \(ggml-base.en.bin, ggml-tiny.bin\)/,
  );
  const plan = planPull(whisper, { file: "ggml-tiny.bin" });
  assert.equal(plan.kind, "whisper");
  assert.equal(plan.task, "transcription");
  assert.deepEqual(plan.files.map((x) => x.path), ["ggml-tiny.bin"]);
  assert.throws(() => planPull(whisper, { file: "ggml-large.bin" }), /no ggml-large.bin; it has/);
  assert.throws(() => planPull(whisper, { task: "chat", file: "ggml-tiny.bin" }), /transcription model/);
  assert.equal(planPull(repo(["ggml-only.bin"]), {}).file, "ggml-only.bin");
});
