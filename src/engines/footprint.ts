// Owns the memory budget's estimate of a model BEFORE it loads: the files its engine will read, and only those
// (the dtype's ONNX graph and external data, the one GGUF file, the one ggml file), never the whole folder,
// which may hold every dtype of a repo. Once loaded, the engine's own memoryBytes() (weights as allocated plus
// caches and states) replaces this estimate.
import { backendOf } from "./backends.ts";
import { filesBytes } from "./transformers/weights.ts";
import type { ModelEntry } from "./types.ts";

/** Bytes of the files an entry's engine will load (its descriptor says which); 0 when they are not on disk yet. */
export async function estimateLoadBytes(entry: ModelEntry): Promise<number> {
  try {
    return filesBytes(await backendOf(entry.engine).loadFiles(entry));
  } catch {
    // A missing or misnamed file: the load reports it; nothing to count.
  }
  return 0;
}
