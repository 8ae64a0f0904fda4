// Owns llama.cpp's descriptor (src/engines/descriptor.ts): GGUF files for chat and embeddings, `gpu_layers`,
// `mmap`, the shim and ggml libraries of the variants in native/build. Its engine modules load only in a
// runner.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { GGUF_FORMAT } from "../../hub/select.ts";
import type { BackendDescriptor } from "../descriptor.ts";
import { ggufFile } from "./files.ts";

const NATIVE_BUILD = fileURLToPath(new URL("../../../native/build/", import.meta.url));

export const LLAMA: BackendDescriptor = {
  kind: "llama.cpp",
  tasks: ["chat", "embedding"],
  claims: (task, file) => task !== "transcription" && !!file?.toLowerCase().endsWith(".gguf"),
  ownOptions: ["gpu_layers", "file", "context_length", "batch_size", "mmap"],
  layout: { kind: "file", pattern: /\.gguf$/i },
  pullFormat: GGUF_FORMAT,
  loadFiles: (entry) => Promise.resolve([ggufFile(entry)]),
  runnerNeeds: ({ llamaLib }) => ({
    ffi: [NATIVE_BUILD, ...(llamaLib ? [llamaLib, dirname(llamaLib)] : [])],
    // --llama-lib outside the checkout: the loader looks for the shim there before opening it.
    read: llamaLib ? [llamaLib] : [],
  }),
  load: async (task, entry, ctx) => {
    const llama = await import("./mod.ts");
    return task === "chat"
      ? await llama.loadLlamaChat(entry, ctx)
      : await llama.loadLlamaEmbedding(entry, ctx);
  },
};
