// Owns the memory budget's estimate of a model BEFORE it loads: the files its engine will read, and only those
// (the dtype's ONNX graph and external data, the one GGUF file, the one ggml file), never the whole folder,
// which may hold every dtype of a repo. Once loaded, the engine's own memoryBytes() (weights as allocated plus
// caches and states) replaces this estimate.
import { join } from "node:path";
import { ggufFile } from "./llama/mod.ts";
import { chatModelFileName } from "./transformers/chat_files.ts";
import { embeddingModelFileName, localDir } from "./transformers/embedding_files.ts";
import { filesBytes, onnxWeightFiles } from "./transformers/weights.ts";
import type { ModelEntry } from "./types.ts";
import { modelFile } from "./whisper/mod.ts";

/** Bytes of the files an entry's engine will load; 0 when they are not on disk yet (a download pending). */
export async function estimateLoadBytes(entry: ModelEntry): Promise<number> {
  try {
    switch (entry.engine) {
      case "transformers": {
        const dtype = entry.dtype ?? "fp32";
        if (entry.task === "embedding") {
          const dir = localDir(entry);
          return filesBytes([
            ...onnxWeightFiles(dir, dtype, embeddingModelFileName(entry)),
            join(dir, "tokenizer.json"),
          ]);
        }
        const name = chatModelFileName(entry);
        return filesBytes([...onnxWeightFiles(entry.path, dtype, name), join(entry.path, "tokenizer.json")]);
      }
      case "llama.cpp":
        return filesBytes([ggufFile(entry)]);
      case "whisper.cpp":
        return filesBytes([await modelFile(entry)]);
    }
  } catch {
    // A missing or misnamed file: the load reports it; nothing to count.
  }
  return 0;
}
