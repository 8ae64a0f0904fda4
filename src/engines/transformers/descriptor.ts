// Owns transformers.js's descriptor (src/engines/descriptor.ts): ONNX folders for chat and embeddings, on
// onnxruntime-node (CPU) or onnxruntime-web (WebGPU), and the native shim of native/build/ort. Its engine
// modules (transformers.js itself) load only in a runner.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ONNX_FORMAT } from "../../hub/select.ts";
import type { BackendDescriptor } from "../descriptor.ts";
import { chatModelFileName } from "./chat_files.ts";
import { embeddingModelFileName, localDir } from "./embedding_files.ts";
import { onnxWeightFiles } from "./weights.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** npm packages with native code that transformers.js loads (onnxruntime-node, sharp). */
function nativeNpmDirs(): string[] {
  const dir = join(REPO, "node_modules", ".deno");
  try {
    return [...Deno.readDirSync(dir)]
      .filter((e) => /^(onnxruntime-node|@img\+sharp-linux)/.test(e.name))
      .map((e) => join(dir, e.name));
  } catch {
    return [];
  }
}

export const TRANSFORMERS: BackendDescriptor = {
  kind: "transformers",
  tasks: ["chat", "embedding"],
  // The default for chat and embedding models that are not a GGUF file.
  claims: (task, file) => task !== "transcription" && !file?.toLowerCase().endsWith(".gguf"),
  ownOptions: [
    "model_file_name",
    "ort_spinning",
    "pooling",
    "onnx_native",
    "onnx_direct_run",
    "context_length",
  ],
  layout: { kind: "folder" },
  pullFormat: ONNX_FORMAT,
  loadFiles: (entry) => {
    const dtype = entry.dtype ?? "fp32";
    if (entry.task === "embedding") {
      const dir = localDir(entry);
      return Promise.resolve([
        ...onnxWeightFiles(dir, dtype, embeddingModelFileName(entry)),
        join(dir, "tokenizer.json"),
      ]);
    }
    return Promise.resolve([
      ...onnxWeightFiles(entry.path, dtype, chatModelFileName(entry)),
      join(entry.path, "tokenizer.json"),
    ]);
  },
  runnerNeeds: () => ({ ffi: [join(REPO, "native", "build", "ort"), ...nativeNpmDirs()] }),
  load: async (task, entry, ctx) =>
    task === "chat"
      ? await (await import("./chat_backend.ts")).loadChatBackend(entry, ctx)
      : await (await import("./embedding.ts")).loadEmbedding(entry, ctx),
};
