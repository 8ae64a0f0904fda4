// Owns whisper.cpp's descriptor (src/engines/descriptor.ts): ggml files for transcription, the shim built in
// native/build (its CPU or GPU variant), the VAD model its runner reads. Loads only in a runner.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { WHISPER_FORMAT } from "../../hub/select.ts";
import type { BackendDescriptor } from "../descriptor.ts";
import { modelFile } from "./files.ts";

const NATIVE_BUILD = fileURLToPath(new URL("../../../native/build/", import.meta.url));

export const WHISPER: BackendDescriptor = {
  kind: "whisper.cpp",
  tasks: ["transcription"],
  claims: (task) => task === "transcription",
  ownOptions: ["beam_size", "best_of", "file"],
  layout: { kind: "file", pattern: /^ggml-[^/]+\.bin$/ },
  pullFormat: WHISPER_FORMAT,
  loadFiles: async (entry) => [await modelFile(entry)],
  runnerNeeds: ({ whisperLib, vadModel }) => ({
    ffi: [NATIVE_BUILD, ...(whisperLib ? [whisperLib, dirname(whisperLib)] : [])],
    read: vadModel ? [vadModel] : [],
  }),
  load: async (_task, entry, ctx) => {
    const { whisperLoader } = await import("./mod.ts");
    const w = ctx.whisper ?? {};
    return await whisperLoader({ lib: w.lib, concurrency: w.concurrency })(entry, ctx) as never;
  },
};
