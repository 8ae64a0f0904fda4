// Owns which code loads which model: the loaders built into this server, keyed by engine kind and task, with
// the parts of the configuration each needs. transformers.js models compute in a worker each
// (src/workers/); whisper.cpp runs through non-blocking FFI calls, already off the HTTP thread.
import type { Config } from "./config.ts";
import type { Loaders } from "./engines/registry.ts";
import { whisperLoader } from "./engines/whisper/mod.ts";
import { workerLoaders } from "./workers/host.ts";

export function builtinLoaders(config: Config): Loaders {
  return {
    transformers: workerLoaders({ debug: config.logLevel === "debug" }),
    "whisper.cpp": {
      transcription: whisperLoader({
        lib: config.whisperLib || undefined,
        concurrency: config.transcriptionConcurrency,
      }),
    },
  };
}
