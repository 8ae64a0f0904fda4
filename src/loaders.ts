// Owns which code loads which model: the loaders built into this server, keyed by engine kind and task, with
// the parts of the configuration each needs. transformers.js and llama.cpp models compute in a runner process
// each (src/workers/), whisper.cpp models too.
import type { Config } from "./config.ts";
import type { Loaders } from "./engines/registry.ts";
import { whisperLoader } from "./engines/whisper/mod.ts";
import { whisperLibFor } from "./engines/whisper/ffi.ts";
import { workerLoaders } from "./workers/host.ts";

export function builtinLoaders(config: Config): Loaders {
  const debug = config.logLevel === "debug";
  const whisper = {
    lib: config.whisperLib || whisperLibFor(config.whisperVariant),
    concurrency: config.transcriptionConcurrency,
    vadModel: config.vadModel || undefined,
  };
  return {
    // Both run a model per worker; the worker picks the backend by the entry's engine.
    transformers: workerLoaders({ debug: config.logLevel === "debug", isolation: config.isolation }),
    "llama.cpp": workerLoaders({ debug: config.logLevel === "debug", isolation: config.isolation }),
    // With --isolation=thread whisper.cpp runs in this process, through non-blocking FFI calls.
    "whisper.cpp": {
      transcription: config.isolation === "process"
        ? workerLoaders({ debug, isolation: "process", whisper }).transcription
        : whisperLoader(whisper),
    },
  };
}
